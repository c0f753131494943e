/**
 * The extension's logic against the real Python server over stdio: launch resolution and
 * initializationOptions from the extension's settings, index state for the status bar, a
 * scripted workflow run followed through `agentic/event`, the review tree and diff documents,
 * the lightbulb's accept going through `workspace/applyEdit` with edits that need confirmation,
 * refine, reject, rollback, cancel, search, and a clean shutdown. A temp git workspace, its own
 * cache dir (AGENTIC_LSP_CACHE_DIR) and HF_HUB_OFFLINE=1: nothing leaves the machine.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { CodeActionRequest, type CodeAction } from 'vscode-languageserver-protocol/node';
import { children, decisionArgs, pendingChangesets, reviewText, type ChangeNode } from '../../src/logic/changesetModel';
import { IndexStates } from '../../src/logic/indexState';
import { buildInitializationOptions } from '../../src/logic/initOptions';
import { realProbe } from '../../src/logic/probe';
import {
  ServerCommand,
  type AcceptResult,
  type ChangesetJson,
  type IndexStatusResult,
  type ListWorkflowsResult,
  type ListRunsResult,
  type RollbackResult,
  type RunMessage,
  type RunStarted,
  type RunStatusJson,
  type SearchResult,
  type WorkflowGraphResult,
} from '../../src/logic/protocol';
import { workflowItems } from '../../src/logic/quickPicks';
import { progressStatus, runSummary, RunTracker, stageUsage } from '../../src/logic/runTracker';
import { resolveLaunch } from '../../src/logic/serverLaunch';
import { toUserError } from '../../src/logic/serverErrors';
import { marksFromStages, parseMermaid, renderSvg, styleMermaid } from '../../src/logic/workflowGraph';
import { buildEditorContext, fixPlace, fixTask } from '../../src/logic/editorContext';
import { runActions, runView, stageRows } from '../../src/logic/runList';
import {
  BROKEN_JSON,
  FIXED_JSON,
  GREET,
  git,
  HAVE_SERVER,
  HELLO,
  JSON_ERROR,
  makeWorkspace,
  PYTHON,
  serverEnv,
} from '../support/workspace';
import { EditorClient, fileUri } from './editorClient';

let base: string;
let root: string;
let editor: EditorClient;
const tracker = new RunTracker();
const indexStates = new IndexStates();
let firstChangeset: ChangesetJson;

before(async () => {
  if (!HAVE_SERVER) {
    return;
  }
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agentic-vscode-'));
  const made = makeWorkspace(base);
  root = fs.realpathSync(made.root);
  const launch = resolveLaunch({ serverPath: '', pythonPath: PYTHON, extraArgs: [], env: {} }, root, undefined, realProbe, os.homedir());
  const env = serverEnv(base);
  editor = EditorClient.start(launch, root, env);
  editor.onEvent((event) => {
    tracker.handle(event);
    indexStates.fromEvent(event);
  });
  const options = buildInitializationOptions({
    commitOnAccept: true,
    extra: { llm: { provider: 'scripted', script_path: made.script }, index: { watch: false } },
  });
  await editor.initialize(root, options);
  indexStates.serverState = 'running';
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

test('the server offers every command the extension sends', { skip }, () => {
  const offered = new Set(editor.capabilities?.executeCommandProvider?.commands ?? []);
  for (const command of Object.values(ServerCommand)) {
    assert.ok(offered.has(command), `${command} is not offered`);
  }
  assert.ok(editor.capabilities?.codeActionProvider, 'code actions are offered');
});

test('index state reaches the status bar; index status describes the folder', { skip }, async () => {
  await editor.waitEvent('index_done');
  await editor.waitFor('a ready index state', () => indexStates.list().find((r) => r.state === 'ready' || r.state === 'embedding'));
  const status = await editor.command<IndexStatusResult>(ServerCommand.indexStatus, {});
  assert.equal(status.roots.length, 1);
  assert.equal(status.roots[0].root, root);
  assert.ok(status.roots[0].files >= 3, `files: ${status.roots[0].files}`);
  assert.equal(typeof status.roots[0].densePending, 'number');
  assert.ok(status.roots[0].lastSummary && status.roots[0].lastSummary.files >= 3, 'the last sync summary');
  indexStates.fromStatus(status.roots[0]);
  assert.match(indexStates.view().text, /agentic: /);
  assert.ok(fs.existsSync(path.join(base, 'cache')), 'the index lives in AGENTIC_LSP_CACHE_DIR');
});

test('workflows for the quick pick, and the graph drawn from the server mermaid', { skip }, async () => {
  const listed = await editor.command<ListWorkflowsResult>(ServerCommand.listWorkflows, {});
  const items = workflowItems(listed.workflows);
  assert.equal(items[0].value, null);
  assert.ok(items.some((i) => i.value === 'vscode_edit'));
  assert.ok(items.some((i) => i.value === 'bug_fix'), 'shipped workflows are listed too');
  const { mermaid } = await editor.command<WorkflowGraphResult>(ServerCommand.workflowGraph, { workflow: 'bug_fix' });
  const graph = parseMermaid(mermaid);
  assert.ok(graph.nodes.some((n) => n.id === 'fix'));
  assert.match(renderSvg(graph, { current: 'fix' }), /class="node current" data-node="fix"/);
});

test('a run: progress events, its plan graph, a changeset in the review tree', { skip }, async () => {
  const { runId } = await editor.command<RunStarted>(ServerCommand.runWorkflow, {
    task: 'Make the greeting friendlier',
    workflow: 'vscode_edit',
  });
  tracker.started(runId, 'Make the greeting friendlier', 'vscode_edit', root);
  const stages: string[] = [];
  const calls: string[] = [];
  tracker.watch(runId, (state, event) => {
    if (event.kind === 'stage_started') {
      stages.push(state.currentStage ?? '');
    }
    if (event.kind === 'model_call') {
      calls.push(progressStatus(state, event));
    }
  });
  const final = await tracker.finished(runId);
  assert.equal(final.status, 'succeeded', final.error);
  // the scripted model reports whitespace-word counts as its usage: every call is metered
  assert.ok(calls.length > 0, 'model_call events reach the client');
  assert.match(calls[0], /^\w+ · 1 call · \S+ prompt \+ \S+ completion tokens$/);
  assert.equal(final.usage.calls, calls.length);
  assert.ok(final.usage.promptTokens > 0 && final.usage.completionTokens > 0, JSON.stringify(final.usage));
  const perStage = [...stageUsage(final).values()].reduce((sum, u) => sum + u.calls, 0);
  assert.ok(perStage > 0 && perStage <= final.usage.calls, `${perStage} stage calls of ${final.usage.calls}`);
  assert.match(runSummary(final), / · \d+ calls? · \S+ prompt \+ \S+ completion tokens$/);
  assert.equal(final.scripted, true, 'a scripted run says so');
  assert.deepEqual(stages, ['code']);
  assert.deepEqual(final.finished.map((f) => [f.stage, f.ok]), [['code', true]]);
  assert.ok(final.changesetId);
  const plan = parseMermaid(final.mermaid ?? '');
  assert.ok(plan.nodes.some((n) => n.id === 'code'), final.mermaid ?? 'no plan event');
  assert.match(renderSvg(plan, marksFromStages(null, final.finished)), /class="node ok" data-node="code"/);
  const { mermaid } = await editor.command<WorkflowGraphResult>(ServerCommand.workflowGraph, { runId });
  assert.equal(mermaid, final.mermaid);
  // the server's own work-done progress for the run: begin … end
  await editor.waitFor('progress end', () => editor.progress.some((p) => p.value.kind === 'end'));
  assert.ok(editor.progress.some((p) => p.value.kind === 'begin' && p.value.cancellable === true));

  const listed = await editor.command<{ changesets: ChangesetJson[] }>(ServerCommand.listChangesets, {});
  const pending = pendingChangesets(listed.changesets);
  assert.deepEqual(pending.map((c) => c.id), [final.changesetId]);
  firstChangeset = await editor.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId: final.changesetId });
  const files = children({ type: 'changeset', changeset: firstChangeset });
  assert.equal(files.length, 1);
  const file = files[0];
  assert.ok(file.type === 'file');
  assert.equal(file.file.path, 'src/greet.py');
  assert.equal(reviewText(file.file, 'original'), GREET);
  assert.equal(reviewText(file.file, 'proposed'), GREET.replace('    return "hello " + name', HELLO));
  assert.equal(children(file).length, 1);
  assert.equal(fs.readFileSync(path.join(root, 'src', 'greet.py'), 'utf8'), GREET, 'nothing is written before accept');
});

test('the lightbulb accepts a hunk through a confirmed workspace edit, then it is committed', { skip }, async () => {
  const greet = path.join(root, 'src', 'greet.py');
  const uri = editor.open(greet);
  const hunkNode = children(children({ type: 'changeset', changeset: firstChangeset })[0])[0] as Extract<ChangeNode, { type: 'hunk' }>;
  const diagnostics = await editor.waitFor('hint diagnostics on the hunk', () => {
    const found = editor.diagnostics.get(uri) ?? [];
    return found.length ? found : undefined;
  });
  assert.equal(diagnostics[0].source, 'agentic');
  assert.equal(diagnostics[0].code, `${firstChangeset.id}:${hunkNode.hunk.index}`);
  const actions = (await editor.connection.sendRequest(CodeActionRequest.type, {
    textDocument: { uri },
    range: hunkNode.hunk.range,
    context: { diagnostics, triggerKind: 1 },
  })) as CodeAction[];
  const titles = actions.map((a) => a.title);
  assert.ok(titles.includes('Accept change') && titles.includes('Reject change') && titles.includes('Show diff'), titles.join(', '));
  const accept = actions.find((a) => a.title === 'Accept change')!;
  assert.equal(accept.isPreferred, true);
  assert.equal(accept.command?.command, ServerCommand.acceptChangeset);
  assert.deepEqual(accept.command?.arguments?.[0], decisionArgs(hunkNode), 'the lightbulb and the tree send the same arguments');

  const result = await editor.command<AcceptResult>(accept.command!.command, accept.command!.arguments![0]);
  assert.equal(result.applied, true);
  assert.equal(result.via, 'editor');
  const edit = editor.edits.at(-1)!.edit;
  const annotations = Object.values(edit.changeAnnotations ?? {});
  assert.ok(annotations.length > 0 && annotations.every((a) => a.needsConfirmation === true), 'VS Code shows its refactor preview');
  assert.equal(editor.buffer(greet), GREET.replace('    return "hello " + name', HELLO));
  assert.equal(fs.readFileSync(greet, 'utf8'), GREET.replace('    return "hello " + name', HELLO));
  assert.ok(result.commitId, 'commit on accept');
  assert.equal(git(root, 'rev-parse', 'HEAD'), result.commitId);
  assert.equal(git(root, 'show', '--name-only', '--format=', 'HEAD'), 'src/greet.py');
  assert.equal(result.changeset.status, 'accepted');
  const after = await editor.command<{ changesets: ChangesetJson[] }>(ServerCommand.listChangesets, {});
  assert.deepEqual(pendingChangesets(after.changesets), []);
  await editor.waitFor('hints cleared', () => (editor.diagnostics.get(uri) ?? ['x']).length === 0);
});

test('refine with feedback supersedes the proposal; reject ends the new one', { skip }, async () => {
  const started = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task: 'Document greet', workflow: 'vscode_edit' });
  const first = await tracker.finished(started.runId);
  assert.equal(first.status, 'succeeded', first.error);
  const refined = await editor.command<RunStarted>(ServerCommand.refine, {
    changesetId: first.changesetId,
    feedback: 'Also welcome the person',
  });
  const second = await tracker.finished(refined.runId);
  assert.equal(second.status, 'succeeded', second.error);
  assert.notEqual(second.changesetId, first.changesetId);
  const old = await editor.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId: first.changesetId });
  assert.equal(old.status, 'superseded');
  const fresh = await editor.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId: second.changesetId });
  assert.equal(fresh.iteration, 1);
  assert.match(reviewText(fresh.files[0], 'proposed'), /Greet and welcome/);
  const rejected = await editor.command<ChangesetJson>(ServerCommand.rejectChangeset, decisionArgs({ type: 'changeset', changeset: fresh }));
  assert.equal(rejected.status, 'rejected');
  assert.doesNotMatch(fs.readFileSync(path.join(root, 'src', 'greet.py'), 'utf8'), /Greet/);
});

test('rollback restores the open buffer and the file, with a revert commit', { skip }, async () => {
  const greet = path.join(root, 'src', 'greet.py');
  const result = await editor.command<RollbackResult>(ServerCommand.rollback, {});
  assert.equal(result.changesetId, firstChangeset.id);
  assert.deepEqual(result.files, ['src/greet.py']);
  assert.equal(editor.buffer(greet), GREET);
  await editor.waitFor('the file restored on disk', () => fs.readFileSync(greet, 'utf8') === GREET);
  if (result.revertCommitId) {
    assert.equal(git(root, 'rev-parse', 'HEAD'), result.revertCommitId);
  }
});

test('cancelling a run stops it and proposes nothing', { skip }, async () => {
  const { runId } = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task: 'Slow task', workflow: 'vscode_edit' });
  await editor.waitFor('the code stage to start', () => tracker.get(runId)?.currentStage === 'code');
  const cancelled = await editor.command<{ cancelled: boolean }>(ServerCommand.cancelRun, { runId });
  assert.equal(cancelled.cancelled, true);
  const final = await tracker.finished(runId);
  assert.equal(final.status, 'cancelled');
  assert.equal(final.changesetId, null);
});

test('semantic search finds the function for the quick pick', { skip }, async () => {
  const result = await editor.command<SearchResult>(ServerCommand.search, { query: 'add two numbers', limit: 5 });
  assert.ok(result.results.length > 0, result.notes.join('; '));
  const hit = result.results.find((r) => r.path === 'src/calc.py');
  assert.ok(hit, result.results.map((r) => r.path).join(', '));
  assert.equal(hit.uri, fileUri(path.join(root, 'src', 'calc.py')));
  assert.ok(hit.startLine >= 1 && hit.endLine >= hit.startLine, `lines ${hit.startLine}-${hit.endLine}`);
  assert.equal(hit.range.start.line, hit.startLine - 1);
  assert.ok(Object.keys(hit.signals).length > 0, 'the signals that found it');
  assert.ok(Array.isArray(result.filesConsidered));
});

test('an accept against a buffer that moved on is refused as stale, with the hint', { skip }, async () => {
  const greet = path.join(root, 'src', 'greet.py');
  const started = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task: 'Document greet', workflow: 'vscode_edit' });
  const run = await tracker.finished(started.runId);
  assert.equal(run.status, 'succeeded', run.error);
  editor.type(greet, editor.buffer(greet)!.replace('def greet(name):', 'def greet(name):  # mine'));
  await assert.rejects(editor.command(ServerCommand.acceptChangeset, { changesetId: run.changesetId }), (error: unknown) => {
    const user = toUserError(error);
    return user.stale && /changed since changeset/.test(user.message) && /refresh/.test(user.hint);
  });
  assert.match(editor.buffer(greet)!, /# mine/, 'the typing is untouched');
  await assert.rejects(editor.command(ServerCommand.acceptChangeset, { changesetId: 'no-such-id' }), (error: unknown) => {
    const user = toUserError(error);
    return /no changeset/.test(user.message) && user.hint.length > 0 && !user.stale;
  });
  const rejected = await editor.command<ChangesetJson>(ServerCommand.rejectChangeset, { changesetId: run.changesetId });
  assert.equal(rejected.status, 'rejected');
});

test('"Fix this": the selection and the diagnostic there lead the prompt, and the fix is proposed', { skip }, async () => {
  const file = path.join(root, 'src', 'greeting.json');
  const uri = editor.open(file, 'json');
  // what VS Code hands the code action: the cursor on the error, the JSON diagnostic there
  const diagnostic = { range: { start: { line: 2, character: 2 }, end: { line: 2, character: 11 } }, message: JSON_ERROR, severity: 0, source: 'json' };
  const cursor = { line: 2, character: 4 };
  const context = buildEditorContext(fixPlace({ uri, selection: { start: cursor, end: cursor }, cursor, diagnostics: [diagnostic] }));
  const task = fixTask(context.diagnostics ?? []);
  assert.equal(task, `Fix: ${JSON_ERROR}`);
  // without the editor context the same task finds no scripted reply
  const blind = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task, workflow: 'vscode_edit' });
  const failed = await tracker.finished(blind.runId);
  assert.equal(failed.status, 'aborted', failed.error);
  assert.match(failed.error, /scripted model has no reply/, failed.error);
  const { runId } = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task, workflow: 'vscode_edit', context });
  const run = await tracker.finished(runId);
  // the scripted step matches only a prompt with the selected lines' header and the message
  assert.equal(run.status, 'succeeded', run.error);
  const started = run.events.find((e) => e.kind === 'run_started')!;
  assert.deepEqual(started.data.context, {
    path: 'src/greeting.json', startLine: 3, endLine: 3, cursorLine: 3, diagnostics: 1,
    description: (started.data.context as { description: string }).description,
  });
  const changeset = await editor.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId: run.changesetId });
  assert.equal(reviewText(changeset.files[0], 'proposed'), FIXED_JSON);
  assert.equal(fs.readFileSync(file, 'utf8'), BROKEN_JSON, 'nothing is written before accept');
  await editor.command(ServerCommand.rejectChangeset, { changesetId: run.changesetId });
});

test('a gated run waits in the runs list, takes a message, is approved, and proposes its changeset', { skip }, async () => {
  const { runId } = await editor.command<RunStarted>(ServerCommand.runWorkflow, { task: 'Type the adder', workflow: 'vscode_gated' });
  tracker.started(runId, 'Type the adder', 'vscode_gated', root);
  const waiting = await tracker.settled(runId);
  assert.equal(waiting.status, 'waiting_input', waiting.error);
  assert.deepEqual(waiting.pending?.files, ['src/calc.py']);
  assert.match(waiting.pending?.diff ?? '', /\+def add_numbers\(a: int, b: int\) -> int:/);
  assert.equal(waiting.nodeStates.code, 'WAITING_INPUT');
  const graph = parseMermaid(styleMermaid(waiting.mermaid ?? '', waiting.nodeStates));
  assert.equal(graph.nodes.find((n) => n.id === 'code')?.state, 'WAITING_INPUT');

  const { runs } = await editor.command<ListRunsResult>(ServerCommand.listRuns, { limit: 10 });
  const listed = runs.find((r) => r.runId === runId)!;
  assert.ok(listed, runs.map((r) => r.runId).join(', '));
  assert.equal(runs[0].runId, runId, 'newest first');
  assert.equal(runView(listed).contextValue, 'run:waiting_input');
  assert.match(runView(listed).description, /^vscode_gated · \d+% · waits at code$/);
  assert.deepEqual([...runActions(listed)].sort(), ['approve', 'cancel', 'graph', 'message', 'revise']);
  assert.deepEqual(stageRows(listed).map((row) => `${row.stage}=${row.state}`), ['code=WAITING_INPUT']);

  const message = await editor.command<RunMessage>(ServerCommand.sendMessage, { runId, text: 'Keep it short' });
  assert.equal(message.status, 'queued');
  const since = waiting.events.length;
  const answered = await editor.command<RunStatusJson>(ServerCommand.respond, { runId, decision: 'approve' });
  assert.equal(answered.runId, runId);
  tracker.resumed(runId, since);
  const done = await tracker.finished(runId);
  assert.equal(done.status, 'succeeded', done.error);
  assert.ok(done.changesetId);
  assert.equal(done.nodeStates.code, 'COMPLETED');
  assert.ok(done.events.slice(since).some((e) => e.kind === 'run_resumed'));
  const status = await editor.command<RunStatusJson>(ServerCommand.runStatus, { runId });
  assert.deepEqual([status.status, status.progress, status.changesetId, status.messages.length], ['succeeded', 100, done.changesetId, 1]);
  assert.equal(runView(status).contextValue, 'run:succeeded:changeset');
  const changeset = await editor.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId: done.changesetId });
  assert.match(reviewText(changeset.files[0], 'proposed'), /def add_numbers\(a: int, b: int\) -> int:/);
  await editor.command(ServerCommand.rejectChangeset, { changesetId: done.changesetId });
  await assert.rejects(editor.command(ServerCommand.respond, { runId, decision: 'approve' }), (error: unknown) =>
    /not waiting for a review/.test(toUserError(error).message),
  );
});
