import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgenticEvent } from '../../src/logic/protocol';
import { runPage } from '../../src/logic/graphPage';
import {
  applyStatus,
  formatTokens,
  newRun,
  progressMessage,
  progressStatus,
  runSummary,
  RunTracker,
  stageUsage,
  usageText,
} from '../../src/logic/runTracker';

let ts = 0;
function ev(kind: string, data: Record<string, unknown> = {}, runId: string | null = 'r1'): AgenticEvent {
  ts += 1;
  return { kind, root: '/ws', runId, data, ts };
}

const RUN = [
  ev('run_started', { task: 'Fix it', provider: 'scripted (test double, not a real model)', scripted: true }),
  ev('orchestrator_decision', { workflow: 'bug_fix', reasoning: 'a bug' }),
  ev('plan', { stages: [], mermaid: 'graph TD;\n a --> b;' }),
  ev('stage_started', { stage: 'reproduce', attempt: 1, maxAttempts: 2 }),
  ev('model_call', {
    stage: 'reproduce', role: 'tester', promptTokens: 3000, completionTokens: 200, seconds: 1.25, counted: 'provider',
    total: { calls: 1, promptTokens: 3000, completionTokens: 200 },
  }),
  ev('stage_finished', {
    stage: 'reproduce', attempt: 1, ok: false, summary: 'no failing test',
    usage: { calls: 1, promptTokens: 3000, completionTokens: 200 },
  }),
  ev('routing', { stage: 'reproduce', to: 'fix', reason: 'failure' }),
  ev('stage_started', { stage: 'fix', attempt: 1, maxAttempts: 2 }),
  ev('model_call', {
    stage: 'fix', role: 'coder', promptTokens: 1200, completionTokens: 312, seconds: 2, counted: 'provider',
    total: { calls: 2, promptTokens: 4200, completionTokens: 512 },
  }),
];
const END = [
  ev('model_call', {
    stage: 'fix', role: 'reviewer', promptTokens: 0, completionTokens: 0, seconds: 0.5, counted: 'none',
    total: { calls: 3, promptTokens: 4200, completionTokens: 512 },
  }),
  ev('stage_finished', { stage: 'fix', attempt: 1, ok: true, summary: 'edited', usage: { calls: 2, promptTokens: 1200, completionTokens: 312 } }),
  ev('changeset_ready', { changesetId: 'cs1', files: ['a.py'] }),
  ev('run_finished', {
    status: 'succeeded', changesetId: 'cs1', error: '', usage: { calls: 3, promptTokens: 4200, completionTokens: 512 },
  }),
];

test('events that arrive before anyone watches the run are replayed, in order', async () => {
  const tracker = new RunTracker();
  for (const e of RUN) {
    assert.equal(tracker.handle(e), true);
  }
  const seen: string[] = [];
  tracker.watch('r1', (state, event) => seen.push(`${event.kind}:${state.currentStage ?? '-'}`));
  const state = tracker.get('r1')!;
  assert.equal(state.currentStage, 'fix');
  assert.equal(state.workflow, 'bug_fix');
  assert.equal(state.scripted, true);
  assert.equal(state.mermaid, 'graph TD;\n a --> b;');
  assert.deepEqual(state.finished, [
    { stage: 'reproduce', ok: false, summary: 'no failing test', usage: { calls: 1, promptTokens: 3000, completionTokens: 200 } },
  ]);
  assert.deepEqual(state.usage, { calls: 2, promptTokens: 4200, completionTokens: 512 });
  assert.deepEqual(state.currentUsage, { calls: 1, promptTokens: 1200, completionTokens: 312 });
  assert.equal(seen.length, RUN.length);
  const done = tracker.finished('r1');
  END.forEach((e) => tracker.handle(e));
  const final = await done;
  assert.equal(final.status, 'succeeded');
  assert.equal(final.changesetId, 'cs1');
  assert.equal(final.currentStage, null);
  assert.equal(seen.length, RUN.length + END.length);
  assert.equal((await tracker.finished('r1')).status, 'succeeded', 'a finished run resolves at once');
});

test('other runs, events without a run and non-run kinds are kept apart', () => {
  const tracker = new RunTracker();
  assert.equal(tracker.handle(ev('index_state', { state: 'ready' }, null)), false);
  assert.equal(tracker.handle(ev('changeset_proposed', {}, 'r9')), false);
  tracker.handle(ev('stage_started', { stage: 'code' }, 'r2'));
  tracker.handle(ev('run_finished', { status: 'failed', error: 'model down' }, 'r3'));
  assert.equal(tracker.get('r2')?.currentStage, 'code');
  assert.equal(tracker.get('r3')?.status, 'failed');
  assert.equal(tracker.get('r3')?.error, 'model down');
  assert.equal(tracker.get('r9'), undefined);
  assert.deepEqual(tracker.all().map((r) => r.runId), ['r3', 'r2']);
});

test('only the newest runs are kept', () => {
  const tracker = new RunTracker(3);
  for (let i = 0; i < 5; i++) {
    tracker.handle(ev('run_started', { task: `t${i}` }, `run${i}`));
  }
  assert.deepEqual(tracker.all().map((r) => r.runId), ['run4', 'run3', 'run2']);
});

test('started() records the task even when the events came first', () => {
  const tracker = new RunTracker();
  tracker.handle(ev('stage_started', { stage: 'code' }, 'r5'));
  const state = tracker.started('r5', 'Add a flag', 'feature', '/ws');
  assert.equal(state.task, 'Add a flag');
  assert.equal(state.workflow, 'feature');
  assert.equal(tracker.lastRunId, 'r5');
});

test('progress messages read like the CLI', () => {
  assert.equal(progressMessage(ev('stage_started', { stage: 'test', attempt: 2, maxAttempts: 3 })), 'test (attempt 2 of 3)');
  assert.equal(progressMessage(ev('stage_finished', { stage: 'test', ok: false })), 'test: failed');
  assert.equal(progressMessage(ev('routing', { stage: 'test', to: 'implement', reason: 'failure' })), 'test → implement (failure)');
  assert.equal(progressMessage(ev('changeset_ready', { changesetId: 'c1' })), 'changeset c1 ready for review');
  assert.equal(progressMessage(ev('run_finished', { status: 'failed', error: 'boom' })), 'run failed: boom');
  assert.equal(progressMessage(ev('retrieval', {})), '');
});

test('model usage: the total so far from model_call, per stage from stage_finished, final from run_finished', () => {
  const tracker = new RunTracker();
  const seen: string[] = [];
  tracker.watch('r1', (state, event) => seen.push(progressStatus(state, event)));
  RUN.forEach((e) => tracker.handle(e));
  const state = tracker.get('r1')!;
  // the running stage's calls so far count for it before its stage_finished
  assert.deepEqual(Object.fromEntries(stageUsage(state)), {
    reproduce: { calls: 1, promptTokens: 3000, completionTokens: 200 },
    fix: { calls: 1, promptTokens: 1200, completionTokens: 312 },
  });
  assert.equal(seen.at(-1), 'fix · 2 calls · 4.2k prompt + 512 completion tokens');
  assert.equal(seen[seen.indexOf('reproduce · 1 call · 3k prompt + 200 completion tokens') + 1],
    'reproduce: failed (1 call · 3k prompt + 200 completion tokens) · 1 call · 3k prompt + 200 completion tokens');
  assert.equal(seen[0], 'started (scripted (test double, not a real model))', 'nothing to add before a model call');
  END.forEach((e) => tracker.handle(e));
  assert.deepEqual(state.usage, { calls: 3, promptTokens: 4200, completionTokens: 512 });
  assert.deepEqual(stageUsage(state).get('fix'), { calls: 2, promptTokens: 1200, completionTokens: 312 });
  assert.equal(seen.at(-1), 'run succeeded · 3 calls · 4.2k prompt + 512 completion tokens');
  assert.equal(runSummary(state), 'run succeeded, changeset cs1 · 3 calls · 4.2k prompt + 512 completion tokens');
  const page = runPage(state);
  assert.equal(page.subtitle, 'run r1: succeeded, changeset cs1 · 3 calls · 4.2k prompt + 512 completion tokens');
  assert.deepEqual(Object.fromEntries(page.marks.notes!), {
    reproduce: '1 call · 3k + 200 tok',
    fix: '2 calls · 1.2k + 312 tok',
  });
});

test('run_finished has the last word on usage; a run with no model calls says so', () => {
  const tracker = new RunTracker();
  tracker.handle(ev('model_call', { stage: 'code', role: 'coder', promptTokens: 10, completionTokens: 5, total: { calls: 1, promptTokens: 10, completionTokens: 5 } }, 'r7'));
  tracker.handle(ev('run_finished', { status: 'failed', error: 'x', usage: { calls: 4, promptTokens: 40, completionTokens: 20 } }, 'r7'));
  assert.deepEqual(tracker.get('r7')!.usage, { calls: 4, promptTokens: 40, completionTokens: 20 });
  tracker.handle(ev('run_finished', { status: 'aborted' }, 'r8'));
  assert.equal(runSummary(tracker.get('r8')!), 'run aborted · no model calls');
  // an older server without usage: model_call without total still adds up
  tracker.handle(ev('model_call', { stage: 's', role: 'a', promptTokens: 7, completionTokens: 3 }, 'r9'));
  tracker.handle(ev('model_call', { stage: 's', role: 'a', promptTokens: 7, completionTokens: 3 }, 'r9'));
  assert.deepEqual(tracker.get('r9')!.usage, { calls: 2, promptTokens: 14, completionTokens: 6 });
});

test('token counts read short', () => {
  assert.deepEqual([0, 512, 999, 1000, 4210, 12_345, 999_999, 1_500_000].map(formatTokens), ['0', '512', '999', '1k', '4.2k', '12k', '1M', '1.5M']);
  assert.equal(usageText({ calls: 1, promptTokens: 1, completionTokens: 0 }), '1 call · 1 prompt + 0 completion tokens');
  assert.equal(
    progressMessage(ev('model_call', { stage: 'fix', role: 'coder', promptTokens: 0, completionTokens: 0, seconds: 0.25, counted: 'none' })),
    'fix · coder: 0 prompt + 0 completion tokens, 0.3s, not counted by the provider',
  );
});

const QUESTION = {
  stage: 'code', name: 'Code', question: 'Approve?', summary: 'typed', files: ['src/greet.py'], diff: '+x', revisions: 0, maxRevisions: 5,
};

test("a plan gate's question keeps its artefacts (the plan files); a question without them has none", async () => {
  const tracker = new RunTracker();
  const artefacts = ['/w/.agentic-lsp/runs/p1/plan.md', '/w/.agentic-lsp/runs/p1/tickets.md'];
  tracker.handle(ev('run_started', { task: 'Round totals', workflow: 'plan_and_implement' }, 'p1'));
  tracker.handle(ev('run_waiting', { status: 'waiting_input', stage: 'planning', question: { ...QUESTION, stage: 'planning', artefacts } }, 'p1'));
  const state = await tracker.settled('p1');
  assert.deepEqual(state.pending?.artefacts, artefacts);
  tracker.handle(ev('run_started', { task: 'Type', workflow: 'gated' }, 'p2'));
  tracker.handle(ev('review_requested', { ...QUESTION, artefacts: 'not a list' }, 'p2'));
  assert.equal(tracker.get('p2')?.pending?.artefacts, undefined);
});

test('a gated run: node states, the question, waiting settles but does not finish, an answer goes on', async () => {
  const tracker = new RunTracker();
  const g = (kind: string, data: Record<string, unknown> = {}) => tracker.handle(ev(kind, data, 'g1'));
  g('run_started', { task: 'Type the greeting', workflow: 'gated' });
  g('node_state', { stage: 'code', state: 'READY', reason: '' });
  g('node_state', { stage: 'code', state: 'RUNNING', reason: '' });
  g('stage_started', { stage: 'code', attempt: 1 });
  g('stage_finished', { stage: 'code', ok: true, summary: 'typed' });
  g('review_requested', QUESTION);
  g('node_state', { stage: 'code', state: 'WAITING_INPUT', reason: 'review' });
  const finished = tracker.finished('g1');
  let ended = false;
  void finished.then(() => (ended = true));
  g('run_waiting', { status: 'waiting_input', stage: 'code', question: QUESTION });
  const state = await tracker.settled('g1');
  assert.equal(state.status, 'waiting_input');
  assert.deepEqual(state.pending, QUESTION);
  assert.deepEqual(state.nodeStates, { code: 'WAITING_INPUT' });
  assert.equal(runSummary(state), 'run waiting for your review of code · no model calls');
  assert.equal(runPage(state).subtitle, 'run g1: waiting for your review of code · no model calls');
  assert.deepEqual(runPage(state).marks.ok, undefined, 'node states colour the graph, not the verdicts');
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(ended, false, 'a waiting run has not finished');

  // the answer: the run works again until it settles again
  const since = state.events.length;
  tracker.resumed('g1', since);
  assert.equal(state.status, 'running');
  const settled = tracker.settled('g1');
  g('review_answered', { stage: 'code', decision: 'approve', feedback: '', by: 'person' });
  g('run_resumed', { resumedFrom: 'waiting_input', answer: { decision: 'approve', feedback: '' } });
  g('message', { id: 1, text: 'hi', sent: 1, status: 'queued', delivered: null, stage: '', role: '' });
  g('message', { id: 1, text: 'hi', sent: 1, status: 'delivered', delivered: 2, stage: 'code', role: 'code' });
  g('node_state', { stage: 'code', state: 'COMPLETED', reason: '' });
  g('run_finished', { status: 'succeeded', changesetId: 'cs9' });
  assert.equal((await settled).status, 'succeeded');
  assert.equal((await finished).changesetId, 'cs9');
  assert.equal(state.pending, null);
  assert.deepEqual(state.messages.map((m) => m.status), ['delivered']);
  const logged: string[] = [];
  tracker.watch('g1', (_s, e) => logged.push(e.kind), since);
  assert.deepEqual(logged, ['review_answered', 'run_resumed', 'message', 'message', 'node_state', 'run_finished'], 'watching from an index skips what was logged');
  assert.equal(progressMessage(ev('review_answered', { stage: 'code', decision: 'revise', feedback: 'more', by: 'person' })), 'code: revise (person): more');
  assert.equal(progressMessage(ev('node_state', { stage: 'polish', state: 'PRUNED', reason: 'by the user' })), 'polish pruned (by the user)');
  assert.equal(progressMessage(ev('node_state', { stage: 'polish', state: 'RUNNING' })), '');
});

test('an answer the run already got past is not undone; an interrupted run has finished', async () => {
  const tracker = new RunTracker();
  tracker.handle(ev('run_waiting', { status: 'waiting_input', stage: 'code', question: QUESTION }, 'g2'));
  const since = tracker.get('g2')!.events.length;
  // the run went on and waits again before the answer to respond came back
  tracker.handle(ev('run_resumed', { resumedFrom: 'waiting_input' }, 'g2'));
  tracker.handle(ev('run_waiting', { status: 'waiting_input', stage: 'code', question: { ...QUESTION, revisions: 1 } }, 'g2'));
  assert.equal(tracker.resumed('g2', since).status, 'waiting_input');
  tracker.handle(ev('run_finished', { status: 'interrupted' }, 'g3'));
  assert.equal((await tracker.finished('g3')).status, 'interrupted');
});

test('a run status fills in a run this window saw no event of, and never overrides events', () => {
  const status = {
    runId: 'old', task: 'Old task', workflow: 'gated', status: 'waiting_input', stage: 'code', attempt: 1, progress: 50,
    usage: { calls: 3, promptTokens: 30, completionTokens: 3 }, pending: QUESTION, stages: { code: 'WAITING_INPUT', test: 'READY' },
    changesetId: null, error: '', started: 1, finished: null, messages: [], resumable: false,
  };
  const fresh = newRun('old');
  applyStatus(fresh, status);
  assert.deepEqual([fresh.task, fresh.status, fresh.pending?.stage, fresh.usage.calls], ['Old task', 'waiting_input', 'code', 3]);
  assert.deepEqual(fresh.nodeStates, { code: 'WAITING_INPUT', test: 'READY' });
  const tracker = new RunTracker();
  tracker.handle(ev('node_state', { stage: 'code', state: 'COMPLETED' }, 'old'));
  tracker.handle(ev('run_finished', { status: 'succeeded' }, 'old'));
  const seen = tracker.update(status);
  assert.equal(seen.status, 'succeeded', 'the events are newer');
  assert.deepEqual(seen.nodeStates, { code: 'COMPLETED', test: 'READY' });
  assert.equal(seen.task, 'Old task');
});
