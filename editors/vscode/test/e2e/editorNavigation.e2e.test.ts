/**
 * End to end, offline: an MCP client's `find_references` answered by VS Code's own language
 * support. code-server (VS Code in the browser) with the packaged .vsix runs in Debian's
 * Chromium; the extension starts agentic-lsp, which serves MCP over HTTP in the same process
 * (docs/mcp.md). The workspace is TypeScript, so the provider that answers is VS Code's
 * BUILT-IN TypeScript language features (no extension to install): the agentic extension lends
 * it through `agentic/editorNavigation` (src/logic/editorNavigation.ts).
 *
 * The fixture is one where a name-based answer is wrong: classes `Circle` and `Square` both
 * define `area()`. From the Node side the test connects an MCP client to the server's endpoint
 * (tests/e2e/mcp_ask.py: the runtime file with the URL and token, then the Python MCP SDK) and
 * asks for the references of `Circle.area`: the answer says `editor:vscode` and lists only
 * `Circle.area`'s declaration and its one use, never `Square.area`'s.
 *
 * Needs what codeServer.e2e.test.ts needs (`AGENTIC_E2E_CODE_SERVER`, Chromium, the .venv,
 * `agentic-lsp.vsix`); skips, saying which is missing.
 */

import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { HAVE_SERVER, makeWorkspace, PYTHON, REPO, serverEnv } from '../support/workspace';

const EXTENSION = path.resolve(__dirname, '../../..');
const VSIX = path.join(EXTENSION, 'agentic-lsp.vsix');
const CODE_SERVER = process.env.AGENTIC_E2E_CODE_SERVER ?? '';
const CHROMIUM = process.env.AGENTIC_E2E_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = process.env.AGENTIC_E2E_SCREENSHOTS ?? path.join(EXTENSION, 'test-results');
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const MCP_ASK = path.join(REPO, 'tests', 'e2e', 'mcp_ask.py');
const WAIT = 90_000;

/** Two classes with a same-named method: `area` matched by name would be wrong half the time. */
const SHAPES_TS = [
  'export class Circle {',
  '  area(): number {',
  '    return 3;',
  '  }',
  '}',
  '',
  'export class Square {',
  '  area(): number {',
  '    return 4;',
  '  }',
  '}',
  '',
].join('\n');
const USE_TS = [
  "import { Circle, Square } from './shapes';",
  '',
  'export function round(): number {',
  '  return new Circle().area();',
  '}',
  '',
  'export function boxy(): number {',
  '  return new Square().area();',
  '}',
  '',
].join('\n');
// a configured project: the TypeScript server sees use.ts when asked from shapes.ts
const TSCONFIG = JSON.stringify({ compilerOptions: { target: 'es2020', module: 'commonjs', strict: true }, include: ['src/**/*.ts'] });

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
let env: NodeJS.ProcessEnv;
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

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  const logs = path.join(base, 'user-data', 'logs');
  if (name.startsWith('timeout-') && fs.existsSync(logs)) {
    fs.cpSync(logs, path.join(SHOTS, `${name}-logs`), { recursive: true });
  }
}

async function until(what: string, condition: () => boolean, timeoutMs = WAIT): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface References {
  source: string;
  fallback?: string;
  results: { path: string; line: number; col: number; definition: boolean }[];
}

/** One MCP tool call on the endpoint of the server the extension started (a separate process,
 * as an agent's MCP client would be). */
async function mcp(tool: string, args: Record<string, unknown>): Promise<References> {
  const { stdout } = await promisify(execFile)(PYTHON, [MCP_ASK, root, tool, JSON.stringify(args)], { env, timeout: 150_000 });
  return JSON.parse(stdout) as References;
}

before(async () => {
  if (skip) {
    return;
  }
  fs.mkdirSync(SHOTS, { recursive: true });
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agentic-e2e-nav-'));
  env = serverEnv(base);
  const settings = {
    'agentic.server.pythonPath': PYTHON,
    'agentic.server.env': { AGENTIC_LSP_CACHE_DIR: env.AGENTIC_LSP_CACHE_DIR, HF_HUB_OFFLINE: '1' },
    // the TypeScript server's first answer loads the project: more than the default 5 s here
    'agentic.server.settings': { index: { watch: false }, navigation: { editor_timeout_s: 60 } },
  };
  root = fs.realpathSync(makeWorkspace(base, {
    '.vscode/settings.json': JSON.stringify(settings, null, 2),
    'tsconfig.json': TSCONFIG,
    'src/shapes.ts': SHAPES_TS,
    'src/use.ts': USE_TS,
  }).root);
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
      'typescript.disableAutomaticTypeAcquisition': true,
      'typescript.surveys.enabled': false,
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
  if (codeServer && codeServer.exitCode === null) {
    const exited = new Promise((resolve) => codeServer.once('exit', resolve));
    codeServer.kill();
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  }
  if (base) {
    // the server it started may still be closing its index
    fs.rmSync(base, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
  }
});

test("an MCP client's find_references is answered by VS Code's TypeScript support (editor:vscode)", { skip, timeout: 300_000 }, async (t) => {
  try {
    // the extension started the server and it indexed the folder
    await page.locator('.statusbar-item', { hasText: /agentic: \d+ files/ }).waitFor({ timeout: WAIT });
    // the user opens shapes.ts from the explorer: VS Code's TypeScript support starts for it
    await page.keyboard.press('Control+Shift+E');
    const explorer = page.locator('.explorer-folders-view');
    const shapes = explorer.locator('.monaco-list-row', { hasText: /^shapes\.ts$/ });
    await explorer.locator('.monaco-list-row', { hasText: /^src$/ }).waitFor({ timeout: WAIT });
    if (!(await shapes.isVisible())) {
      await explorer.locator('.monaco-list-row', { hasText: /^src$/ }).click();
    }
    await shapes.click();
    await page.locator('.monaco-editor .view-line', { hasText: 'export class Square' }).first().waitFor({ timeout: WAIT });
    await shot('nav-1-shapes-open');

    // Circle.area's name: line 2 (1-based), column 2 (0-based), as MCP clients give positions
    const at = { name: 'area', path: 'src/shapes.ts', line: 2, column: 2 };
    const asked = Date.now();
    let attempts = 1;
    let answer = await mcp('find_references', at);
    // the TypeScript server may still be loading the project when first asked (an empty answer
    // falls through to name matches, with a note): ask again until VS Code answers
    const deadline = Date.now() + WAIT;
    while (answer.source !== 'editor:vscode' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      answer = await mcp('find_references', at);
      attempts += 1;
    }
    t.diagnostic(`answered by ${answer.source} after ${attempts} call(s), ${Date.now() - asked} ms`);
    const found = answer.results.map((r) => `${r.path}:${r.line}:${r.col}`).sort();
    assert.equal(answer.source, 'editor:vscode', `answered by ${answer.source} (${answer.fallback ?? 'no note'}): ${found.join(', ')}`);
    assert.equal(answer.fallback, undefined);
    // Circle.area's declaration and its use in round(); never Square.area (shapes.ts:8,
    // use.ts:8), which a name match would list
    assert.deepEqual(found, ['src/shapes.ts:2:2', 'src/use.ts:4:22']);

    // and the other class's method: only its own
    const square = await mcp('find_references', { ...at, line: 8 });
    assert.equal(square.source, 'editor:vscode');
    assert.deepEqual(square.results.map((r) => `${r.path}:${r.line}:${r.col}`).sort(), ['src/shapes.ts:8:2', 'src/use.ts:8:22']);
    await shot('nav-2-answered');
  } catch (error) {
    if (page) {
      await shot('timeout-editor-navigation').catch(() => undefined);
    }
    throw error;
  }
});
