/**
 * The extension's answer to `agentic/editorNavigation` (src/logic/editorNavigation.ts) against
 * the real Python server over stdio. The client advertises the capability like the extension's
 * StaticFeature; `executeProvider` stands for `vscode.commands.executeCommand`: like VS Code, it
 * first asks the agentic-lsp server's own provider at that position (which must answer empty:
 * echo suppression), then returns what "another extension's provider" would (a LocationLink;
 * that answer is the boundary: it is this test's, standing for Pylance or the TypeScript
 * server). An MCP client on the same process (tests/e2e/mcp_ask.py) reads the engine's answer.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { DefinitionRequest, type Location } from 'vscode-languageserver-protocol/node';
import {
  answerNavigation,
  NAVIGATION_METHOD,
  navigationCapability,
  type NavigationRequest,
  type WirePosition,
} from '../../src/logic/editorNavigation';
import { realProbe } from '../../src/logic/probe';
import { resolveLaunch } from '../../src/logic/serverLaunch';
import { HAVE_SERVER, makeWorkspace, PYTHON, REPO, serverEnv } from '../support/workspace';
import { EditorClient, fileUri } from './editorClient';

const MODELS = 'class A:\n    def save(self):\n        pass\n\n\nclass B:\n    def save(self):\n        pass\n';
const USE = 'from models import A, B\n\n\ndef keep():\n    A().save()\n\n\ndef other():\n    B().save()\n';
const MCP_ASK = path.join(REPO, 'tests', 'e2e', 'mcp_ask.py');

let base: string;
let root: string;
let env: NodeJS.ProcessEnv;
let editor: EditorClient;
const asked: NavigationRequest[] = [];
const echoes: unknown[] = [];

before(async () => {
  if (!HAVE_SERVER) {
    return;
  }
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agentic-vscode-nav-'));
  root = fs.realpathSync(makeWorkspace(base, { 'src/models.py': MODELS, 'src/use.py': USE }).root);
  const launch = resolveLaunch({ serverPath: '', pythonPath: PYTHON, extraArgs: [], env: {} }, root, undefined, realProbe, os.homedir());
  env = serverEnv(base);
  editor = EditorClient.start(launch, root, env);
  const models = fileUri(path.join(root, 'src', 'models.py'));
  // --- VS Code's side: executeCommand runs every provider, agentic-lsp's own included ---
  const executeProvider = async (command: string, uri: string, position: WirePosition): Promise<unknown> => {
    if (command === 'vscode.executeDefinitionProvider') {
      echoes.push(await editor.connection.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position }));
    }
    const selection = { start: { line: 1, character: 8 }, end: { line: 1, character: 12 } };
    return [{ targetUri: models, targetRange: selection, targetSelectionRange: selection }];
  };
  editor.connection.onRequest(NAVIGATION_METHOD, (request: NavigationRequest) => {
    asked.push(request);
    return answerNavigation(request, executeProvider);
  });
  await editor.initialize(root, { index: { watch: false } }, navigationCapability());
});

after(async () => {
  if (!editor) {
    return;
  }
  try {
    assert.equal(await editor.stop(), 0, 'the server exits 0 after shutdown and exit');
  } finally {
    editor.kill();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

const skip = HAVE_SERVER ? false : `no Python server at ${PYTHON} (run scripts/setup.sh first)`;

test('the engine answers find_definition with VS Code providers, labelled editor:vscode', { skip }, async () => {
  const args = JSON.stringify({ name: 'save', path: 'src/use.py', line: 5, column: 8 });
  const { stdout } = await promisify(execFile)(PYTHON, [MCP_ASK, root, 'find_definition', args], { env, timeout: 120_000 });
  const answer = JSON.parse(stdout) as { source: string; results: { path: string; qualname: string }[] };
  assert.equal(answer.source, 'editor:vscode');
  assert.deepEqual(
    answer.results.map((r) => [r.path, r.qualname]),
    [['src/models.py', 'A.save']],
  );
  assert.deepEqual(asked, [
    {
      method: 'textDocument/definition',
      textDocument: { uri: fileUri(path.join(root, 'src', 'use.py')) },
      position: { line: 4, character: 8 },
    },
  ]);
  assert.deepEqual(echoes, [[]], "agentic-lsp's own provider, asked back at that spot, answered empty");
  const own = (await editor.connection.sendRequest(DefinitionRequest.type, {
    textDocument: { uri: fileUri(path.join(root, 'src', 'use.py')) },
    position: { line: 4, character: 8 },
  })) as Location[];
  assert.equal(own.length, 2, 'asked when no question waits: its name-based answer (A.save, B.save)');
});
