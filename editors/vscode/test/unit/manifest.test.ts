import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const ROOT = path.join(__dirname, '../../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const source = (file: string) => fs.readFileSync(path.join(ROOT, 'src', file), 'utf8');

test('every command the code registers is contributed under the Agentic category, and back', () => {
  const registered = new Set([...source('commands.ts').matchAll(/'(agenticLsp\.\w+)'/g)].map((m) => m[1]));
  const contributed = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
  for (const id of registered) {
    assert.ok(contributed.has(id), `${id} is registered but not in package.json`);
  }
  for (const id of contributed) {
    assert.ok(registered.has(id), `${id} is in package.json but never registered`);
  }
  for (const command of manifest.contributes.commands) {
    assert.equal(command.category, 'Agentic', command.command);
  }
  const titles = manifest.contributes.commands.map((c: { title: string }) => c.title);
  for (const wanted of ['Run Workflow…', 'Search Codebase', 'Show Pending Changes', 'Review Changeset', 'Accept', 'Reject',
    'Refine with Feedback', 'Rollback Last Accept', 'Reindex', 'Show Index Status', 'Show Workflow Graph', 'Restart Server',
    'Fix This', 'Explain This', 'Show Runs', 'Approve Run', 'Revise Run…', 'Send Message to Run…', 'Prune Stage…',
    'Resume Run', 'Cancel Run', 'Show Run Graph']) {
    assert.ok(titles.includes(wanted), wanted);
  }
});

test('the README documents every command, view and setting', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const hidden = new Set(
    (manifest.contributes.menus.commandPalette as { command: string; when: string }[]).filter((m) => m.when === 'false').map((m) => m.command),
  );
  for (const command of manifest.contributes.commands as { command: string; title: string }[]) {
    const title = command.title.replace(/\s*\(.*\)$/, '').replace(/…$/, '');
    assert.ok(hidden.has(command.command) || readme.includes(title), `${command.command} (${title}) is not in the README`);
  }
  for (const view of manifest.contributes.views.agentic as { name: string }[]) {
    assert.ok(readme.includes(`*${view.name}*`), `the ${view.name} view is not in the README`);
  }
  for (const key of Object.keys(manifest.contributes.configuration.properties)) {
    assert.ok(readme.includes(`\`${key}\``), `${key} is not in the README`);
  }
});

test('the Runs view offers each steering action only where the server takes it', () => {
  const items = manifest.contributes.menus['view/item/context'] as { command: string; when: string; group: string }[];
  const on = (command: string) => items.filter((i) => i.command === command && i.when.includes('view == agenticRuns'));
  const matches = (command: string, contextValue: string) =>
    on(command).some((i) => new RegExp(/viewItem =~ \/(.*)\//.exec(i.when)![1]).test(contextValue));
  assert.ok(matches('agenticLsp.approveRun', 'run:waiting_input'));
  assert.ok(!matches('agenticLsp.approveRun', 'run:running:prunable'));
  assert.ok(matches('agenticLsp.reviseRun', 'run:waiting_input'));
  assert.ok(matches('agenticLsp.resumeRun', 'run:interrupted:resumable'));
  assert.ok(!matches('agenticLsp.resumeRun', 'run:interrupted'));
  assert.ok(matches('agenticLsp.pruneStage', 'stage:READY:prunable'));
  assert.ok(matches('agenticLsp.pruneStage', 'run:running:prunable'));
  assert.ok(!matches('agenticLsp.pruneStage', 'stage:COMPLETED'));
  assert.ok(matches('agenticLsp.cancelRun', 'run:interrupted:resumable'));
  assert.ok(!matches('agenticLsp.cancelRun', 'run:succeeded:changeset'));
  assert.ok(matches('agenticLsp.sendRunMessage', 'run:waiting_input'));
  assert.ok(matches('agenticLsp.showRunGraph', 'run:failed'));
  assert.ok(on('agenticLsp.approveRun').some((i) => i.group.startsWith('inline')), 'approve is an inline action');
});

test('menus only name contributed commands, and the views they use exist', () => {
  const contributed = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
  for (const [menu, entries] of Object.entries(manifest.contributes.menus) as [string, { command: string }[]][]) {
    for (const entry of entries) {
      assert.ok(contributed.has(entry.command), `${menu}: ${entry.command}`);
    }
  }
  for (const view of manifest.contributes.views.agentic as { id: string }[]) {
    assert.ok(source('extension.ts').includes(`'${view.id}'`), view.id);
  }
  assert.ok(fs.existsSync(path.join(ROOT, manifest.contributes.viewsContainers.activitybar[0].icon)));
});

test('every setting the code reads is contributed and documented, and none is unused', () => {
  const settings = source('settings.ts');
  const read = new Set([...settings.matchAll(/(?:config\.get|userValue)<.+?>\((?:config, )?'([\w.]+)'/g)].map((m) => `agentic.${m[1]}`));
  const contributed = manifest.contributes.configuration.properties as Record<string, { markdownDescription?: string }>;
  for (const key of read) {
    assert.ok(contributed[key], `${key} is read but not contributed`);
  }
  for (const [key, spec] of Object.entries(contributed)) {
    assert.ok((spec.markdownDescription ?? '').length > 30, `${key} is not documented`);
    assert.ok(read.has(key) || key === 'agentic.trace.server', `${key} is contributed but never read`);
  }
  for (const wanted of ['agentic.server.path', 'agentic.llm.ollamaHost', 'agentic.llm.model', 'agentic.mcp.httpPort', 'agentic.changes.commitOnAccept']) {
    assert.ok(contributed[wanted], wanted);
  }
});

test('the language client id matches the trace setting', () => {
  assert.match(source('client.ts'), /new LanguageClient\('agentic',/);
});

test('untrusted workspaces are supported in a limited way, with the risky settings user-only', () => {
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, 'limited');
  assert.ok(trust.description.length > 30);
  const contributed = manifest.contributes.configuration.properties as Record<string, unknown>;
  for (const key of trust.restrictedConfigurations as string[]) {
    assert.ok(contributed[key], `${key} is restricted but not contributed`);
  }
  for (const wanted of ['agentic.server.path', 'agentic.server.env', 'agentic.server.settings', 'agentic.llm.ollamaHost']) {
    assert.ok(trust.restrictedConfigurations.includes(wanted), wanted);
  }
  assert.match(source('client.ts'), /workspaceTrusted: vscode\.workspace\.isTrusted/);
});

test('the package carries what a marketplace (or Open VSX) listing needs', () => {
  const icon = path.join(ROOT, manifest.icon);
  assert.ok(icon.endsWith('.png') && fs.existsSync(icon), 'a PNG icon (the marketplace refuses SVG icons)');
  const png = fs.readFileSync(icon);
  assert.equal(png.readUInt32BE(16), 128, 'icon width');
  assert.equal(png.readUInt32BE(20), 128, 'icon height');
  assert.match(manifest.repository.url, /^https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
  assert.equal(manifest.license, 'Apache-2.0');
  assert.match(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
  assert.ok(manifest.categories.length > 0 && manifest.keywords.length > 0 && manifest.publisher);
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(images.length >= 3, 'screenshots in the README');
  for (const image of images) {
    assert.ok(!image.endsWith('.svg'), `${image}: the marketplace refuses SVG images in a README`);
    assert.ok(fs.existsSync(path.join(ROOT, image)), `${image} is in the repository`);
  }
});
