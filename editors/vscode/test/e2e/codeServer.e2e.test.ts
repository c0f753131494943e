/**
 * End to end in a real extension host, offline: code-server (VS Code in the browser, from npm)
 * with the packaged .vsix installed, driven by playwright-core in Debian's Chromium. The user
 * runs a workflow from the palette, reviews the proposal in the diff editor, accepts it from the
 * editor title, ticks and applies the change in the refactor preview, and opens the workflow graph;
 * runs "Agentic: Fix this" from the lightbulb on a JSON diagnostic; and takes a run of a
 * `review: human` workflow through its gate (the notification, the diff, the Runs view, the
 * graph's node states, a message and a revision that reach the model, the approval); and takes a
 * `plan_and_implement` run through its plan gate (Open Plan, tickets.md edited in its editor and
 * saved by the approval, the edited ticket run). Screenshots of each step go to `test-results/` (or
 * `$AGENTIC_E2E_SCREENSHOTS`).
 *
 * Needs `AGENTIC_E2E_CODE_SERVER` (code-server's `out/node/entry.js`, see
 * `test/e2e/install-code-server.sh`), Chromium (`AGENTIC_E2E_CHROMIUM`, default
 * /usr/bin/chromium), the project's .venv and `agentic-lsp.vsix`; skips, saying which is missing.
 */

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import {
  BROKEN_JSON,
  FIXED_JSON,
  GREET,
  git,
  HAVE_SERVER,
  HELLO,
  LINES,
  makeWorkspace,
  PLAN_EDIT,
  PLAN_TASK,
  PYTHON,
  REVISE_FEEDBACK,
  RUN_MESSAGE,
  serverEnv,
} from '../support/workspace';

const EXTENSION = path.resolve(__dirname, '../../..');
const VSIX = path.join(EXTENSION, 'agentic-lsp.vsix');
const CODE_SERVER = process.env.AGENTIC_E2E_CODE_SERVER ?? '';
const CHROMIUM = process.env.AGENTIC_E2E_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = process.env.AGENTIC_E2E_SCREENSHOTS ?? path.join(EXTENSION, 'test-results');
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const WAIT = 90_000;

const missing = [
  !CODE_SERVER && 'AGENTIC_E2E_CODE_SERVER (code-server entry.js) is not set',
  CODE_SERVER && !fs.existsSync(CODE_SERVER) && `no code-server at ${CODE_SERVER}`,
  !fs.existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}`,
  !HAVE_SERVER && `no Python server at ${PYTHON}`,
  !fs.existsSync(VSIX) && `no ${VSIX} (npm run package)`,
].filter(Boolean);
const skip = missing.length ? `end-to-end skipped: ${missing.join('; ')}` : false;
let base: string;
let root: string;
let codeServer: ChildProcess;
let codeServerLog = '';
let browser: Browser;
let page: Page;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function shot(name: string): Promise<string> {
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  if (name.startsWith('timeout-') && base) {
    // what the extension and the server said (their output channels) goes beside the picture
    const logs = path.join(base, 'user-data', 'logs');
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(SHOTS, `${name}-logs`), { recursive: true });
    }
  }
  return file;
}

/**
 * A notification the extension showed. VS Code puts it on screen as a toast, except that it
 * shows no toast at all for the fourth notification added within 800 ms (its toast rate limit) or
 * while the notification center is open: such a notification only goes to the center, where the
 * user finds it behind the bell, with the same buttons. So: its toast, or else its entry in the
 * center (the center then stays open until {@link closeCenter}); what was on screen is printed
 * and kept as a screenshot either way, and neither found fails the test.
 */
async function notice(text: string | RegExp, what: string): Promise<Locator> {
  const toast = page.locator('.notification-toast', { hasText: text }).first();
  try {
    await toast.waitFor({ timeout: WAIT });
    return toast;
  } catch (error) {
    await shot(`timeout-${what}`);
    const toasts = await page.locator('.notification-toast').allInnerTexts();
    await palette('Notifications: Show Notifications');
    const entry = page.locator('.notifications-center .notification-list-item', { hasText: text }).first();
    const found = await entry.waitFor({ timeout: 5_000 }).then(() => true, () => false);
    const listed = await page.locator('.notifications-center .notification-list-item').allInnerTexts();
    await shot(`timeout-${what}-center`);
    console.log(
      `[${what}] no toast ${String(text)} within ${WAIT} ms; ${found ? 'it is in the notification center' : 'not in the notification center either'}\n` +
        `  toasts on screen: ${JSON.stringify(toasts)}\n  notification center: ${JSON.stringify(listed)}`,
    );
    if (!found) {
      await closeCenter();
      throw error;
    }
    return entry;
  }
}

/** Hide the notification center if {@link notice} left it open (toasts show again). */
async function closeCenter(): Promise<void> {
  if (await page.locator('.notifications-center.visible').isVisible()) {
    await palette('Notifications: Hide Notifications');
    await page.locator('.notifications-center.visible').waitFor({ state: 'hidden', timeout: WAIT });
  }
}

async function palette(command: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: WAIT });
  await input.fill(`>${command}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: command }).first().waitFor({ timeout: WAIT });
  await page.keyboard.press('Enter');
}

/**
 * The quick input is one widget that VS Code reuses: the palette, then a command's pick, then its
 * input box. Each step waits for the title of the input it means, so that text typed while one
 * closes and the next opens cannot land in the wrong one.
 */
async function inputTitled(title: string): Promise<Locator> {
  const widget = page.locator('.quick-input-widget', { has: page.locator('.quick-input-title', { hasText: title }) });
  await widget.waitFor({ state: 'visible', timeout: WAIT });
  const input = widget.locator('.quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: WAIT });
  return input;
}

async function pick(text: string, title: string): Promise<void> {
  const input = await inputTitled(title);
  await input.fill(text);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first().waitFor({ timeout: WAIT });
  await page.keyboard.press('Enter');
}

async function type(text: string, title: string): Promise<void> {
  const input = await inputTitled(title);
  await input.fill(text);
  await page.keyboard.press('Enter');
}

async function runWorkflow(task: string): Promise<void> {
  await palette('Notifications: Clear All Notifications');
  await palette('Agentic: Run Workflow');
  await pick('vscode_edit', 'Agentic: Run Workflow');
  await type(task, 'Agentic: vscode_edit');
}

async function until(what: string, condition: () => boolean, timeoutMs = WAIT): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      await shot(`timeout-${what.replace(/\W+/g, '-')}`);
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Sets a checkbox and waits until it has held that state across three reads 300 ms apart. */
async function settleTick(box: Locator, ticked: boolean, timeoutMs = WAIT): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let held = 0;
  while (held < 3) {
    if (Date.now() > deadline) {
      await shot('timeout-settle-tick');
      throw new Error(`a preview checkbox did not stay ${ticked ? 'ticked' : 'unticked'}`);
    }
    if ((await box.isChecked()) === ticked) {
      held += 1;
    } else {
      held = 0;
      await box.setChecked(ticked);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

before(async () => {
  if (skip) {
    return;
  }
  fs.mkdirSync(SHOTS, { recursive: true });
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agentic-e2e-'));
  const env = serverEnv(base);
  const settings = {
    'agentic.server.pythonPath': PYTHON,
    'agentic.server.env': { AGENTIC_LSP_CACHE_DIR: env.AGENTIC_LSP_CACHE_DIR, HF_HUB_OFFLINE: '1' },
    // (the test command: plan_and_implement's tests stage; the workspace has no tests of its own)
    'agentic.server.settings': { llm: { provider: 'scripted', script_path: '${script}' }, index: { watch: false }, workflows: { test_command: 'true' } },
    'agentic.actions.fixWorkflow': 'vscode_edit',
  };
  const made = makeWorkspace(base, { '.vscode/settings.json': JSON.stringify(settings, null, 2) });
  root = made.root;
  const userData = path.join(base, 'user-data');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify({
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'git.enabled': false,
      'window.commandCenter': false,
      // VS Code in the browser saves after a delay by default: the plan gate's test edits
      // tickets.md and leaves it unsaved, for the approval to save it
      '[markdown]': { 'files.autoSave': 'off' },
    }),
  );
  const csArgs = ['--user-data-dir', userData, '--extensions-dir', path.join(base, 'extensions'), '--config', path.join(base, 'code-server.yaml')];
  const installed = spawnSync(process.execPath, [CODE_SERVER, ...csArgs, '--install-extension', VSIX], { env, encoding: 'utf8' });
  assert.equal(installed.status, 0, installed.stderr + installed.stdout);
  const port = await freePort();
  codeServer = spawn(process.execPath, [CODE_SERVER, ...csArgs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', root], { env });
  codeServer.stdout?.on('data', (d) => (codeServerLog += d));
  codeServer.stderr?.on('data', (d) => (codeServerLog += d));
  await until('code-server to listen', () => codeServerLog.includes('HTTP server listening'), 30_000);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(root)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: WAIT });
});

after(async () => {
  await browser?.close();
  codeServer?.kill();
  if (base) {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('the extension starts the server and shows the index in the status bar', { skip, timeout: 180_000 }, async () => {
  const status = page.locator('.statusbar-item', { hasText: /agentic: \d+ files/ });
  await status.waitFor({ timeout: WAIT });
  assert.match(await status.innerText(), /agentic: [3-9] files/);
  await shot('1-status-bar');
});

test('run a workflow from the palette, review the diff, accept through the refactor preview', { skip, timeout: 300_000 }, async () => {
  await runWorkflow('Make the greeting friendlier');
  const done = await notice('is ready for review', 'run-finished');
  await shot('2-run-finished');
  await done.getByRole('button', { name: 'Review' }).click();
  await closeCenter();
  const diff = page.locator('.monaco-diff-editor');
  await diff.first().waitFor({ timeout: WAIT });
  await page.locator('.monaco-diff-editor .modified', { hasText: 'Hello, ' }).first().waitFor({ timeout: WAIT });
  await page.waitForTimeout(500);
  await shot('3-diff-review');
  assert.equal(fs.readFileSync(path.join(root, 'src', 'greet.py'), 'utf8'), GREET, 'nothing written before accept');

  await palette('Agentic: Show Pending Changes');
  const tree = page.locator('.pane', { hasText: 'Pending Changes' });
  await tree.locator('.monaco-list-row', { hasText: 'Make the greeting friendlier' }).waitFor({ timeout: WAIT });
  await tree.locator('.monaco-list-row', { hasText: 'src/greet.py' }).locator('.monaco-tl-twistie').click();
  await tree.locator('.monaco-list-row', { hasText: 'line 2' }).waitFor({ timeout: WAIT });
  await shot('3b-pending-changes');

  await page.locator('.editor-actions .action-label[aria-label="Accept"]').first().click();
  const apply = page.getByRole('button', { name: 'Apply' });
  await apply.waitFor({ timeout: WAIT });
  await page.waitForTimeout(500);
  await shot('4-refactor-preview');
  // VS Code leaves edits that need confirmation unticked: applying none records nothing
  await apply.click();
  await page.locator('.notification-toast', { hasText: 'the edit was declined' }).first().waitFor({ timeout: WAIT });
  assert.equal(fs.readFileSync(path.join(root, 'src', 'greet.py'), 'utf8'), GREET);
  assert.equal(git(root, 'rev-list', '--count', 'HEAD'), '1');
  await shot('4b-nothing-ticked-declined');
  await page.locator('.editor-actions .action-label[aria-label="Accept"]').first().click();
  await apply.waitFor({ timeout: WAIT });
  await page.locator('.monaco-list-row[aria-label^="src/greet.py"] input.edit-checkbox').first().check();  // ticks its edits
  await page.waitForTimeout(300);
  await shot('4c-refactor-preview-checked');
  await apply.click();
  const expected = GREET.replace('    return "hello " + name', HELLO);
  await until('the accepted file on disk', () => fs.readFileSync(path.join(root, 'src', 'greet.py'), 'utf8') === expected);
  await until('the accept commit', () => git(root, 'rev-list', '--count', 'HEAD') === '2');
  assert.equal(git(root, 'show', '--name-only', '--format=', 'HEAD'), 'src/greet.py');
  await page.locator('.notification-toast', { hasText: 'Accepted' }).first().waitFor({ timeout: WAIT });
  await shot('5-accepted');
});

test('the workflow graph of the run', { skip, timeout: 120_000 }, async () => {
  await palette('Agentic: Show Workflow Graph');
  await pick('Make the greeting friendlier', 'Agentic: Show Workflow Graph');
  const frame = page.frameLocator('iframe.webview').frameLocator('iframe');
  await frame.locator('svg.workflow-graph g[data-node="code"]').waitFor({ timeout: WAIT });
  // the server's node states colour the stages: the code stage completed
  assert.match((await frame.locator('svg.workflow-graph g[data-node="code"]').getAttribute('class')) ?? '', /\bstate-completed\b/);
  await shot('6-workflow-graph');
});

test('the lightbulb on a pending change accepts it through the refactor preview', { skip, timeout: 180_000 }, async () => {
  const greet = path.join(root, 'src', 'greet.py');
  const before = fs.readFileSync(greet, 'utf8');
  await runWorkflow('Document greet');
  await notice('is ready for review', 'document-greet');
  await closeCenter();
  await page.keyboard.press('Control+Shift+E');
  const explorer = page.locator('.explorer-folders-view');
  const greetRow = explorer.locator('.monaco-list-row', { hasText: /^greet\.py$/ });
  if (!(await greetRow.isVisible())) {
    await explorer.locator('.monaco-list-row', { hasText: /^src$/ }).click();
  }
  await greetRow.click();
  // the docstring is inserted before line 2, where the pending-change hint sits
  await page.locator('.monaco-editor .view-line', { hasText: 'return' }).first().click();
  await page.waitForTimeout(1000);
  await page.keyboard.press('Control+.');
  const accept = page.locator('.action-widget .monaco-list-row', { hasText: 'Accept change' });
  await accept.waitFor({ timeout: WAIT });
  await shot('10-lightbulb');
  await page.keyboard.press('Enter'); // the preferred action, "Accept change", is selected
  const apply = page.getByRole('button', { name: 'Apply' });
  await apply.waitFor({ timeout: WAIT });
  await page.locator('.monaco-list-row[aria-label^="src/greet.py"] input.edit-checkbox').first().check();
  await apply.click();
  await page.locator('.notification-toast', { hasText: 'Accepted "Document greet"' }).waitFor({ timeout: WAIT });
  await until('the docstring on disk', () => fs.readFileSync(greet, 'utf8') === before.replace('def greet(name):\n', 'def greet(name):\n    """Greet."""\n'));
  assert.equal(git(root, 'show', '--name-only', '--format=', 'HEAD'), 'src/greet.py');
  const tab = page.locator('.tabs-container .tab', { hasText: 'greet.py' }).first();
  await page.locator('.tabs-container .tab.dirty').first().waitFor({ state: 'detached', timeout: WAIT });
  assert.doesNotMatch((await tab.getAttribute('class')) ?? '', /\bdirty\b/);
  await shot('11-lightbulb-accepted');
});

// VS Code answers `applied: true` after applying only the ticked edits; the server compares the
// buffers with the hunks and records (and commits) only what was really applied.
test('unticking one of two changes in the refactor preview applies and commits only the other', {
  skip,
  timeout: 180_000,
}, async () => {
  await runWorkflow('Shout twice');
  const done = await notice('is ready for review', 'shout-twice');
  await done.getByRole('button', { name: 'Accept' }).click();
  await closeCenter();
  const apply = page.getByRole('button', { name: 'Apply' });
  await apply.waitFor({ timeout: WAIT });
  // The preview tree re-renders while it settles (a file's tick propagates to its rows
  // asynchronously), so a tick is set and then re-read until it holds.
  await settleTick(page.locator('.monaco-list-row[aria-label^="src/lines.py"] input.edit-checkbox').first(), true);
  await settleTick(page.locator('.monaco-list-row[aria-label*="LINE_3 = 3"] input.edit-checkbox').first(), true);
  await settleTick(page.locator('.monaco-list-row[aria-label*="LINE_30"] input.edit-checkbox').first(), false);
  await shot('7-one-of-two-ticked');
  const commits = Number(git(root, 'rev-list', '--count', 'HEAD'));
  await apply.click();
  const lines = path.join(root, 'src', 'lines.py');
  await until('the ticked change on disk', () => fs.readFileSync(lines, 'utf8').includes('LINE_3 = 3'));
  await until('the accept commit', () => Number(git(root, 'rev-list', '--count', 'HEAD')) === commits + 1);
  await shot('8-one-of-two-applied');
  const disk = fs.readFileSync(lines, 'utf8');
  const head = `${git(root, 'show', 'HEAD:src/lines.py')}\n`;
  const has = (text: string) => `LINE_3 ${text.includes('LINE_3')}, LINE_30 ${text.includes('LINE_30')}`;
  assert.equal(disk, LINES.replace('line_3 = 3', 'LINE_3 = 3'), `only the ticked change is applied (disk: ${has(disk)}; HEAD: ${has(head)})`);
  assert.equal(head, disk, 'the commit holds what was applied');
});

test('"Agentic: Fix this" on a diagnostic runs with the selected lines and the diagnostic as context', {
  skip,
  timeout: 240_000,
}, async () => {
  await palette('Notifications: Clear All Notifications');
  await page.keyboard.press('Control+Shift+E');
  const explorer = page.locator('.explorer-folders-view');
  const jsonRow = explorer.locator('.monaco-list-row', { hasText: /^greeting\.json/ });
  if (!(await jsonRow.isVisible())) {
    await explorer.locator('.monaco-list-row', { hasText: /^src$/ }).click();
  }
  await jsonRow.click();
  // VS Code's JSON language server reports the missing comma ("Expected comma") on line 3, at
  // the "excited" key: the cursor goes there (the key starts after two spaces of indentation)
  await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: WAIT });
  await page.locator('.monaco-editor .view-line', { hasText: '"excited"' }).first().click({ position: { x: 40, y: 8 } });
  await page.waitForTimeout(500);
  await page.keyboard.press('Control+.');
  const fix = page.locator('.action-widget .monaco-list-row', { hasText: 'Agentic: Fix this' });
  await fix.waitFor({ timeout: WAIT });
  await shot('12-fix-this-lightbulb');
  await page.keyboard.press('Enter'); // the only action, selected
  // the scripted reply matches only a prompt holding the selection's header and the message
  const done = await notice('is ready for review', 'fix-this');
  await done.getByRole('button', { name: 'Review' }).click();
  await closeCenter();
  await page.locator('.monaco-diff-editor .modified', { hasText: '"hello",' }).first().waitFor({ timeout: WAIT })
    .catch(async (error: unknown) => {
      await shot('timeout-fix-this-diff');
      throw error;
    });
  assert.equal(FIXED_JSON.split('\n')[1], '  "greeting": "hello",');
  await page.waitForTimeout(500);
  await shot('13-fix-this-diff');
  assert.equal(fs.readFileSync(path.join(root, 'src', 'greeting.json'), 'utf8'), BROKEN_JSON, 'nothing written before accept');
  await page.locator('.editor-actions .action-label[aria-label="Reject"]').first().click();
  await page.locator('.notification-toast', { hasText: 'Rejected' }).first().waitFor({ timeout: WAIT });
  // the "Rejecting …" progress toast must be gone before the next scenario clears the
  // notifications: cleared while it closes, it stays on screen and no later toast shows
  await page.locator('.notification-toast', { hasText: 'Rejecting' }).first().waitFor({ state: 'hidden', timeout: WAIT });
});

test('a run waits at its review gate: the notification shows the diff; a message and a revision from the Runs view reach the model; approved, a changeset follows', {
  skip,
  timeout: 300_000,
}, async () => {
  await palette('Notifications: Clear All Notifications');
  await palette('Agentic: Run Workflow');
  await pick('vscode_gated', 'Agentic: Run Workflow');
  await type('Type the adder', 'Agentic: vscode_gated');
  const asked = page.locator('.notification-toast', { hasText: 'waits for your review of stage Code' });
  await asked.first().waitFor({ timeout: WAIT }).catch(async (error: unknown) => {
    await shot('timeout-gate-notification');
    await palette('Notifications: Show Notifications');
    await page.waitForTimeout(1000);
    await shot('timeout-gate-notification-center');
    throw error;
  });
  await shot('14-gate-notification');
  await asked.first().getByRole('button', { name: 'Show Diff' }).click();
  await page.locator('.monaco-editor .view-line', { hasText: '+def add_numbers(a: int, b: int) -> int:' }).first().waitFor({ timeout: WAIT });
  // the question comes back next to its diff
  await asked.first().waitFor({ timeout: WAIT });
  await page.waitForTimeout(300);
  await shot('15-gate-diff');
  assert.equal(fs.readFileSync(path.join(root, 'src', 'calc.py'), 'utf8').includes('a: int'), false, 'nothing written');

  await palette('Agentic: Show Runs');
  const runs = page.locator('.pane').filter({ has: page.locator('.pane-header .title', { hasText: /^Runs$/ }) });
  const row = runs.locator('.monaco-list-row', { hasText: 'Type the adder' }).first();
  await row.waitFor({ timeout: WAIT });
  await runs.locator('.monaco-list-row', { hasText: /vscode_gated · \d+% · waits at code/ }).first().waitFor({ timeout: WAIT });
  await runs.locator('.monaco-list-row', { hasText: 'waits for your review' }).first().waitFor({ timeout: WAIT }); // the code stage's row
  // a click shows the run's graph: the stage that waits is orange
  await row.click();
  // the page is replaced on every event of the run: VS Code loads it into a pending frame, then
  // makes that the active one
  const frame = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
  // (the panel showed another run's graph before: wait for this run's state)
  const node = frame.locator('svg.workflow-graph g[data-node="code"][data-state="WAITING_INPUT"]');
  await node.waitFor({ timeout: WAIT });
  assert.match((await node.getAttribute('class')) ?? '', /\bstate-waiting-input\b/);
  await frame.locator('h1', { hasText: 'Type the adder' }).waitFor({ timeout: WAIT });
  await shot('16-runs-view-waiting-graph');

  // a message to the waiting run, then a revision from the Runs view: the stage runs again, and
  // the scripted model answers only a prompt that holds both the feedback and the message
  await palette('Notifications: Clear All Notifications');
  await palette('Agentic: Send Message to Run');
  await type(RUN_MESSAGE, 'Message to Type the adder');
  await page.locator('.notification-toast', { hasText: "queued for the run's next model call" }).first().waitFor({ timeout: WAIT });
  await row.hover();
  await row.locator('.action-label[aria-label="Revise Run…"]').click();
  await type(REVISE_FEEDBACK, 'Revise Code');
  const again = page.locator('.notification-toast', { hasText: /waits for your review of stage Code.*revision 1 of at most/ });
  await again.first().waitFor({ timeout: WAIT }).catch(async (error: unknown) => {
    await shot('timeout-gate-revision');
    throw error;
  });
  await shot('16b-gate-revision');
  assert.equal(fs.readFileSync(path.join(root, 'src', 'calc.py'), 'utf8').includes('total'), false, 'nothing written');

  await palette('Notifications: Clear All Notifications'); // the next toast shows alone
  await row.hover();
  await row.locator('.action-label[aria-label="Approve Run"]').click();
  // the run's own state first (the Runs view), then its notification (seen twice in CI: no toast
  // within 90 s of the approval while the Runs view said succeeded, the test passing in ~4.5 s
  // otherwise: VS Code's toast rate limit, see notice)
  const succeeded = runs.locator('.monaco-list-row', { hasText: /vscode_gated · 100% · succeeded/ }).first();
  await succeeded.waitFor({ timeout: WAIT }).catch(async (error: unknown) => {
    await shot('timeout-approved-run');
    throw error;
  });
  const done = await notice('is ready for review', 'approved');
  await page.waitForTimeout(1000);
  await frame.locator('svg.workflow-graph g[data-node="code"][data-state="COMPLETED"]').waitFor({ timeout: WAIT });
  await runs.locator('.monaco-list-row', { hasText: /vscode_gated · 100% · succeeded/ }).first().waitFor({ timeout: WAIT });
  await shot('17-gate-approved');
  await done.getByRole('button', { name: 'Review' }).click();
  await closeCenter();
  // the changeset holds the first attempt's edit and the revision's
  const modified = page.locator('.monaco-diff-editor .modified');
  await modified.filter({ hasText: 'def add_numbers(a: int, b: int) -> int:' }).first().waitFor({ timeout: WAIT });
  await modified.filter({ hasText: 'total = a + b' }).first().waitFor({ timeout: WAIT });
  await shot('18-gate-changeset');
  assert.equal(fs.readFileSync(path.join(root, 'src', 'calc.py'), 'utf8').includes('a: int'), false, 'nothing written before accept');
  await palette('Notifications: Clear All Notifications'); // the question asked again beside its diff
});

test('a plan gate: Open Plan opens plan.md and tickets.md; a ticket edited in its editor is saved on Approve and the run goes on with it', {
  skip,
  timeout: 300_000,
}, async () => {
  await palette('Notifications: Clear All Notifications');
  await palette('Agentic: Run Workflow');
  await pick('plan_and_implement', 'Agentic: Run Workflow');
  await type(PLAN_TASK, 'Agentic: plan_and_implement');
  const gate = /waits for your review of stage Plan and tickets[\s\S]*Edit plan\.md and tickets\.md before approving/;
  const asked = await notice(gate, 'plan-gate');
  await shot('19-plan-gate');
  await asked.getByRole('button', { name: 'Open Plan' }).click();
  await closeCenter();
  const tab = (name: string) => page.locator('.tabs-container .tab', { hasText: name }).first();
  await tab('plan.md').waitFor({ timeout: WAIT });
  await tab('tickets.md').waitFor({ timeout: WAIT });
  const runsFolder = path.join(root, '.agentic-lsp', 'runs');
  const [runId] = fs.readdirSync(runsFolder).filter((name) => fs.statSync(path.join(runsFolder, name)).isDirectory());
  const tickets = path.join(runsFolder, runId, 'tickets.md');
  const calc = fs.readFileSync(path.join(root, 'src', 'calc.py'), 'utf8');
  // the person edits the ticket's goal in its editor (tickets.md has the focus) and does not save
  await page.locator('.monaco-editor .view-line', { hasText: '## T1: Document the adder' }).first().click();
  await page.keyboard.press('End');
  await page.keyboard.type(PLAN_EDIT);
  await page.locator('.tabs-container .tab.dirty', { hasText: 'tickets.md' }).first().waitFor({ timeout: WAIT }).catch(async (error: unknown) => {
    await shot('timeout-plan-edit');
    throw error;
  });
  assert.equal(fs.readFileSync(tickets, 'utf8').includes(PLAN_EDIT), false, 'not saved yet');
  // the question comes back next to the plan; approving saves the edited file first, and the
  // ticket's scripted edit answers only the edited goal
  const again = await notice(gate, 'plan-gate-again');
  await shot('20-plan-edited');
  await again.getByRole('button', { name: 'Approve' }).click();
  await closeCenter();
  await until('the edited tickets.md on disk', () => fs.readFileSync(tickets, 'utf8').includes(`## T1: Document the adder${PLAN_EDIT}`));
  await notice('is ready for review', 'plan-approved');
  await shot('21-plan-run-finished');
  await closeCenter();
  assert.equal(fs.readFileSync(path.join(root, 'src', 'calc.py'), 'utf8'), calc, 'nothing written before accept');
  assert.equal(git(root, 'for-each-ref', 'refs/heads/agentic-lsp/'), '', 'no branch of the run left');
  assert.equal(git(root, 'worktree', 'list').split('\n').length, 1, 'no worktree of the run left');
  await palette('Notifications: Clear All Notifications');
});

test('a server that cannot start says why and how to fix it', { skip, timeout: 240_000 }, async () => {
  const settings = path.join(root, '.vscode', 'settings.json');
  const broken = { ...JSON.parse(fs.readFileSync(settings, 'utf8')), 'agentic.server.pythonPath': path.join(base, 'no-such-python') };
  fs.writeFileSync(settings, JSON.stringify(broken, null, 2));
  const restart = await notice('restart the server to apply', 'restart');
  await restart.getByRole('button', { name: 'Restart' }).click();
  await closeCenter();
  const error = await notice('agentic.server.pythonPath is set to', 'server-missing');
  assert.match(await error.innerText(), /Fix or clear the agentic\.server\.pythonPath setting/);
  await closeCenter();
  await page.locator('.statusbar-item', { hasText: 'agentic: server failed' }).waitFor({ timeout: WAIT });
  await shot('9-server-missing');
});
