import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgenticEvent } from '../../src/logic/protocol';
import { progressMessage, RunTracker } from '../../src/logic/runTracker';

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
  ev('stage_finished', { stage: 'reproduce', attempt: 1, ok: false, summary: 'no failing test' }),
  ev('routing', { stage: 'reproduce', to: 'fix', reason: 'failure' }),
  ev('stage_started', { stage: 'fix', attempt: 1, maxAttempts: 2 }),
];
const END = [
  ev('stage_finished', { stage: 'fix', attempt: 1, ok: true, summary: 'edited' }),
  ev('changeset_ready', { changesetId: 'cs1', files: ['a.py'] }),
  ev('run_finished', { status: 'succeeded', changesetId: 'cs1', error: '' }),
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
  assert.deepEqual(state.finished, [{ stage: 'reproduce', ok: false, summary: 'no failing test' }]);
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
