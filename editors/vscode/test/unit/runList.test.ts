import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ReviewQuestion, RunStatusJson } from '../../src/logic/protocol';
import {
  gateButtons,
  openLabel,
  planFiles,
  pruneItems,
  prunableStages,
  questionDocument,
  questionKey,
  runActions,
  runView,
  stageRows,
  stageView,
  waitingNotice,
} from '../../src/logic/runList';

const QUESTION: ReviewQuestion = {
  stage: 'code',
  name: 'Edit the code',
  question: 'Approve the change of stage code?',
  summary: 'typed the greeting',
  files: ['src/greet.py'],
  diff: '--- a/src/greet.py\n+++ b/src/greet.py\n@@ -1 +1 @@\n-def greet(name):\n+def greet(name: str):\n',
  revisions: 0,
  maxRevisions: 5,
};

function run(over: Partial<RunStatusJson> = {}): RunStatusJson {
  return {
    runId: 'r1',
    task: 'Type the greeting\nand more',
    workflow: 'gated',
    status: 'running',
    stage: 'code',
    attempt: 1,
    progress: 33.4,
    usage: { calls: 2, promptTokens: 4200, completionTokens: 512 },
    pending: null,
    stages: { code: 'RUNNING', polish: 'READY', lint: 'SKIPPED' },
    changesetId: null,
    error: '',
    started: 1_700_000_000,
    finished: null,
    messages: [],
    resumable: false,
    ...over,
  };
}

test('a run row: status icon, task, workflow, progress and the stage it is at', () => {
  const view = runView(run());
  assert.equal(view.label, 'Type the greeting');
  assert.equal(view.description, 'gated · 33% · code');
  assert.equal(view.icon, 'sync~spin');
  assert.equal(view.contextValue, 'run:running:prunable');
  assert.match(view.tooltip, /run r1 · gated/);
  assert.match(view.tooltip, /2 calls · 4.2k prompt \+ 512 completion tokens/);

  const waiting = runView(run({ status: 'waiting_input', pending: QUESTION, stages: { code: 'WAITING_INPUT' }, progress: 100 }));
  assert.equal(waiting.description, 'gated · 100% · waits at code');
  assert.equal(waiting.icon, 'bell-dot');
  assert.equal(waiting.color, 'charts.orange');
  assert.equal(waiting.contextValue, 'run:waiting_input');
  assert.match(waiting.tooltip, /waits for your review of Edit the code: Approve the change/);

  const interrupted = runView(run({ status: 'interrupted', resumable: true, stage: 'code', attempt: 2 }));
  assert.equal(interrupted.contextValue, 'run:interrupted:resumable');
  assert.equal(interrupted.description, 'gated · 33% · interrupted');
  const done = runView(run({ status: 'succeeded', changesetId: 'cs1', workflow: null, task: '', progress: 100, stages: { code: 'COMPLETED' } }));
  assert.deepEqual([done.label, done.description, done.icon, done.contextValue], ['r1', 'auto · 100% · succeeded', 'pass', 'run:succeeded:changeset']);
  assert.equal(runView(run({ status: 'failed', error: 'model down' })).icon, 'error');
  assert.match(runView(run({ status: 'failed', error: 'model down' })).tooltip, /error: model down/);
});

test('what can be done with a run in each status', () => {
  const names = (r: RunStatusJson) => [...runActions(r)].sort().join(',');
  assert.equal(names(run()), 'cancel,graph,message,prune');
  assert.equal(names(run({ status: 'waiting_input', stages: { code: 'WAITING_INPUT' } })), 'approve,cancel,graph,message,revise');
  assert.equal(names(run({ status: 'interrupted', resumable: true })), 'cancel,graph,resume');
  assert.equal(names(run({ status: 'interrupted', resumable: false })), 'cancel,graph');
  assert.equal(names(run({ status: 'succeeded' })), 'graph');
  assert.deepEqual(prunableStages(run()), ['code', 'polish']);
  assert.deepEqual(pruneItems(run()).map((i) => [i.value, i.description.split(':')[0]]), [['code', 'running now'], ['polish', 'ready']]);
});

test("a run's stages with their node states", () => {
  const r = run();
  const rows = stageRows(r);
  assert.deepEqual(rows.map((row) => `${row.stage}=${row.state}`), ['code=RUNNING', 'polish=READY', 'lint=SKIPPED']);
  const [code, polish, lint] = rows.map((row) => stageView(row, r));
  assert.deepEqual([code.icon, code.contextValue], ['sync~spin', 'stage:RUNNING:prunable']);
  assert.deepEqual([polish.description, polish.contextValue], ['ready', 'stage:READY:prunable']);
  assert.deepEqual([lint.description, lint.contextValue], ['skipped (not planned)', 'stage:SKIPPED']);
  // a run that ended prunes nothing
  assert.equal(stageView(rows[1], run({ status: 'cancelled' })).contextValue, 'stage:READY');
});

test("a review gate's notification, its key and its diff document", () => {
  assert.equal(
    waitingNotice({ runId: 'r1', task: 'Type the greeting' }, QUESTION),
    'Run "Type the greeting" waits for your review of stage Edit the code (code) · 1 file(s) changed.',
  );
  assert.equal(
    waitingNotice({ runId: 'r1', task: '' }, { ...QUESTION, name: 'code', files: [], revisions: 2 }),
    'Run r1 waits for your review of stage code · no changes · revision 2 of at most 5.',
  );
  assert.notEqual(questionKey('r1', QUESTION), questionKey('r1', { ...QUESTION, revisions: 1 }), 'a revision asks again');
  const doc = questionDocument({ runId: 'r1', task: 'Type the greeting' }, QUESTION);
  assert.match(doc, /^# Run r1: Type the greeting\n# Review of stage Edit the code \(code\)\n# Approve the change/);
  assert.ok(doc.endsWith(QUESTION.diff));
  assert.match(questionDocument({ runId: 'r1', task: 't' }, { ...QUESTION, diff: '' }), /changed nothing/);
});

test("a plan gate's notice names the plan files and offers Open Plan; other gates do not", () => {
  const plan = '/w/.agentic-lsp/runs/r1/plan.md';
  const tickets = '/w/.agentic-lsp/runs/r1/tickets.md';
  const gate: ReviewQuestion = { ...QUESTION, stage: 'planning', name: 'Plan and tickets', files: [], diff: '', artefacts: [plan, tickets] };
  assert.equal(
    waitingNotice({ runId: 'r1', task: 'Round totals' }, gate),
    'Run "Round totals" waits for your review of stage Plan and tickets (planning) · no changes. ' +
      'Edit plan.md and tickets.md before approving if you like: the run goes on with your version.',
  );
  assert.deepEqual(gateButtons(gate), ['Approve', 'Revise…', 'Show Diff', 'Open Plan']);
  assert.deepEqual(planFiles(gate), [plan, tickets]);
  assert.deepEqual(gateButtons(QUESTION), ['Approve', 'Revise…', 'Show Diff'], 'no artefacts: no Open Plan');
  assert.deepEqual(gateButtons({ ...QUESTION, artefacts: [] }), ['Approve', 'Revise…', 'Show Diff']);
  assert.deepEqual(planFiles(QUESTION), []);
  const conflict = { ...QUESTION, artefacts: ['/cache/worktrees/run1/T3/shop/labels.py'] };
  assert.equal(openLabel(conflict), 'Open File', 'a merge conflict handed to the user');
  assert.deepEqual(gateButtons(conflict), ['Approve', 'Revise…', 'Show Diff', 'Open File']);
  assert.equal(openLabel(QUESTION), undefined);
  assert.match(questionDocument({ runId: 'r1', task: 't' }, gate), /# Plan file \(edit it before approving\): \/w\/\.agentic-lsp\/runs\/r1\/tickets\.md\n#\n/);
  assert.equal(waitingNotice({ runId: 'r1', task: 't' }, { ...gate, artefacts: ['C:\\w\\plan.md'] }).endsWith('Edit plan.md before approving if you like: the run goes on with your version.'), true);
});
