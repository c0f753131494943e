import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SearchHit } from '../../src/logic/protocol';
import { firstLine, searchItems, workflowItems } from '../../src/logic/quickPicks';
import { formatUserError, toUserError } from '../../src/logic/serverErrors';

test('workflows: Auto first (no workflow), then by name with their stages', () => {
  const items = workflowItems([
    { name: 'refactor', description: '\nRestructure code.\nMore.', workflowType: 'refactor', stages: [{ id: 'plan', name: 'Plan', type: 'analysis', required: true }] },
    { name: 'bug_fix', description: 'Fix a bug.', workflowType: 'bug_fix', stages: [
      { id: 'reproduce', name: 'R', type: 'tests', required: false },
      { id: 'fix', name: 'F', type: 'code', required: true },
    ] },
  ]);
  assert.deepEqual(items.map((i) => i.value), [null, 'bug_fix', 'refactor']);
  assert.equal(items[1].description, 'reproduce? → fix');
  assert.equal(items[2].detail, 'Restructure code.');
  assert.equal(firstLine('x'.repeat(200)).length, 158);
});

test('search results show the symbol, where it is and its signature', () => {
  const hit: SearchHit = {
    path: 'shop/cart.py', uri: 'file:///ws/shop/cart.py', range: { start: { line: 9, character: 0 }, end: { line: 14, character: 0 } },
    startLine: 10, endLine: 14, score: 0.0312, kind: 'function', symbol: 'shop.cart.total', signature: 'def total(items):', language: 'python', signals: { dense: 1 },
  };
  const [item] = searchItems([hit, { ...hit, kind: 'file', symbol: null, signature: '', startLine: 1, endLine: 1 }]);
  assert.deepEqual([item.label, item.description, item.detail], ['$(symbol-function) shop.cart.total', 'shop/cart.py:10-14', 'def total(items):']);
  const file = searchItems([{ ...hit, kind: 'file', symbol: null, signature: '', startLine: 1, endLine: 1 }])[0];
  assert.deepEqual([file.label, file.description, file.detail], ['$(file) cart.py', 'shop/cart.py:1', 'file, score 0.031']);
});

test('server errors read as message plus hint; stale and cancelled are recognised', () => {
  const stale = { code: -32803, message: 'changeset abc is stale for app.py', data: { kind: 'stale', hint: 'refresh it' } };
  assert.deepEqual(toUserError(stale), { message: 'changeset abc is stale for app.py', hint: 'refresh it', stale: true, cancelled: false });
  assert.equal(formatUserError(stale, 'Accept'), 'Accept failed: changeset abc is stale for app.py — refresh it');
  const repeated = { code: -32803, message: 'a.py changed\n  fix: refresh the changeset', data: { kind: 'stale', hint: 'refresh the changeset' } };
  assert.equal(formatUserError(repeated), 'a.py changed — refresh the changeset');
  assert.equal(toUserError({ message: 'b failed\n  fix: do x' }).hint, 'do x');
  assert.equal(toUserError({ code: -32800, message: 'cancelled' }).cancelled, true);
  assert.equal(formatUserError(new Error('plain')), 'plain');
});
