import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStatus, IndexStates } from '../../src/logic/indexState';
import type { IndexStatus } from '../../src/logic/protocol';

function state(root: string, s: string, files: number, phase = '', message = '') {
  return { kind: 'index_state', root, runId: null, data: { state: s, phase, files, symbols: files * 3, message }, ts: 1 };
}

test('the status bar follows index_state events, worst folder first', () => {
  const states = new IndexStates();
  states.serverState = 'running';
  assert.match(states.view().text, /starting/);
  assert.equal(states.fromEvent(state('/a', 'indexing', 10, 'parse')), true);
  assert.equal(states.view().text, '$(sync~spin) agentic: indexing (parse)');
  states.fromEvent(state('/a', 'ready', 120));
  assert.equal(states.view().text, '$(check) agentic: 120 files');
  states.fromEvent(state('/b', 'degraded', 5, '', 'embedding model missing'));
  const view = states.view();
  assert.equal(view.text, '$(warning) agentic: degraded');
  assert.equal(view.severity, 'warning');
  assert.match(view.tooltip, /\/b: degraded, 5 files, 15 symbols — embedding model missing/);
  assert.match(view.tooltip, /125 files, 375 symbols in all/);
  assert.equal(states.fromEvent({ kind: 'index_done', root: '/a', runId: null, data: {}, ts: 2 }), false);
});

test('a stopped or failed server shows instead of stale index state', () => {
  const states = new IndexStates();
  states.fromEvent(state('/a', 'ready', 3));
  states.serverState = 'failed';
  assert.equal(states.view().severity, 'error');
  assert.match(states.view().text, /server failed/);
});

test('describeStatus lists state, counts, progress and the last summary', () => {
  const status: IndexStatus = {
    state: 'embedding', files: 40, symbols: 200, densePending: 12, store: 'edge', root: '/ws', message: '',
    progress: { phase: 'embed', done: 28, total: 40, percent: 70, rate: 10, etaS: 1.2, message: '' },
    lastSummary: {
      files: 40, symbols: 200, sections: 0, parsed: 40, unchanged: 0, rechecked: 0, removed: 1, embedded: 28,
      embedReused: 0, redactions: 0, parseErrors: 0, skipped: [], timings: { parse: 0.5, embed: 2.0 },
      cancelled: false, notes: [],
    },
  };
  const lines = describeStatus(status);
  assert.deepEqual(lines, [
    '/ws',
    'state: embedding',
    'files: 40, symbols: 200, embeddings pending: 12',
    'store: edge',
    'progress: embed 28/40, about 2 s left',
    'last index: 40 parsed, 0 unchanged, 1 removed, 2.5 s',
  ]);
  const states = new IndexStates();
  states.serverState = 'running';
  states.fromStatus(status);
  assert.equal(states.view().text, '$(sync~spin) agentic: embedding (embed)');
});
