import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildEditorContext,
  describeContext,
  diagnosticsAt,
  explainTask,
  fixPlace,
  fixTask,
  rangesTouch,
  toDiagnosticJson,
  unionRange,
  type DiagnosticLike,
} from '../../src/logic/editorContext';
import type { Range } from '../../src/logic/protocol';

const URI = 'file:///ws/src/app.py';
const r = (l1: number, c1: number, l2: number, c2: number): Range => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

/** Shaped like `vscode.Diagnostic`: severities from 0, a `{value, target}` code, and a Range
 * whose JSON is `[start, end]` (so a context that kept it would send the wrong shape). */
function vscodeRange(range: Range): Range {
  return Object.assign(Object.create({ toJSON: () => [range.start, range.end] }), range);
}
const UNDEFINED: DiagnosticLike = {
  range: vscodeRange(r(3, 11, 3, 14)),
  message: '"nme" is not defined',
  severity: 0,
  source: 'Pyright',
  code: { value: 'reportUndefinedVariable' },
};
const UNUSED: DiagnosticLike = { range: r(1, 0, 1, 9), message: 'import os unused', severity: 1, source: 'ruff', code: 'F401' };
const FAR: DiagnosticLike = { range: r(20, 0, 20, 3), message: 'line too long', severity: 2, code: 501 };
const OWN: DiagnosticLike = { range: r(3, 0, 3, 20), message: 'agentic: pending change 0', severity: 3, source: 'agentic' };
const ALL = [UNUSED, UNDEFINED, FAR, OWN];

test('a selection sends its range, the cursor and only the diagnostics touching it, as plain LSP data', () => {
  const context = buildEditorContext({ uri: URI, selection: vscodeRange(r(2, 0, 5, 0)), cursor: { line: 3, character: 12 }, diagnostics: ALL });
  assert.deepEqual(JSON.parse(JSON.stringify(context)), {
    uri: URI,
    selection: r(2, 0, 5, 0),
    cursor: { line: 3, character: 12 },
    diagnostics: [
      { range: r(3, 11, 3, 14), message: '"nme" is not defined', severity: 1, source: 'Pyright', code: 'reportUndefinedVariable' },
    ],
  });
});

test("errors come first, the extension's own hints never, and an empty selection is only a cursor", () => {
  const context = buildEditorContext({ uri: URI, selection: r(0, 0, 4, 0), cursor: { line: 0, character: 0 }, diagnostics: ALL });
  assert.deepEqual(context.diagnostics?.map((d) => [d.severity, d.code]), [[1, 'reportUndefinedVariable'], [2, 'F401']]);
  const atCursor = buildEditorContext({ uri: URI, selection: r(3, 12, 3, 12), cursor: { line: 3, character: 12 }, diagnostics: ALL });
  assert.equal(atCursor.selection, undefined);
  assert.deepEqual(atCursor.diagnostics?.map((d) => d.message), ['"nme" is not defined'], 'the diagnostics on the cursor line');
  assert.deepEqual(buildEditorContext({ uri: URI }), { uri: URI });
  assert.deepEqual(toDiagnosticJson(FAR), { range: r(20, 0, 20, 3), message: 'line too long', severity: 3, code: 501 });
  assert.deepEqual(diagnosticsAt(ALL, null, null), []);
});

test('"Fix this" with only a cursor points at the lines of the diagnostics there', () => {
  const place = fixPlace({ uri: URI, selection: r(3, 12, 3, 12), cursor: { line: 3, character: 12 }, diagnostics: ALL });
  assert.deepEqual(place.selection, r(3, 11, 3, 14));
  const context = buildEditorContext(place);
  assert.deepEqual(context.selection, r(3, 11, 3, 14));
  assert.equal(fixTask(context.diagnostics ?? []), 'Fix: "nme" is not defined');
  // a selection the user made stays theirs
  assert.deepEqual(fixPlace({ uri: URI, selection: r(0, 0, 9, 0), diagnostics: ALL }).selection, r(0, 0, 9, 0));
  // no diagnostic there: the cursor only (the server takes the code around it)
  const nothing = buildEditorContext(fixPlace({ uri: URI, selection: r(8, 0, 8, 0), cursor: { line: 8, character: 0 }, diagnostics: ALL }));
  assert.deepEqual(nothing, { uri: URI, cursor: { line: 8, character: 0 } });
});

test('task texts and the log line', () => {
  assert.equal(fixTask([]), 'Fix the problem in the selected code');
  assert.equal(fixTask([UNDEFINED, UNUSED, FAR]), 'Fix: "nme" is not defined (and 2 more diagnostics there)');
  assert.equal(fixTask([{ message: `a\n  multi-line ${'x'.repeat(300)}` }]).length, 'Fix: '.length + 200);
  assert.equal(explainTask({ uri: URI, selection: r(1, 0, 2, 0) }), 'Explain the selected code');
  assert.equal(explainTask({ uri: URI, cursor: { line: 1, character: 0 } }), 'Explain the code at the cursor');
  assert.equal(describeContext({ uri: URI, selection: r(1, 0, 3, 0), diagnostics: [toDiagnosticJson(UNUSED)] }, 'src/app.py'), 'src/app.py · lines 2-3 · 1 diagnostic');
  assert.equal(describeContext({ uri: URI, selection: r(1, 4, 1, 9) }, 'src/app.py'), 'src/app.py · line 2');
  assert.equal(describeContext({ uri: URI, cursor: { line: 6, character: 1 } }, 'a.py'), 'a.py · cursor at line 7');
});

test('range helpers', () => {
  assert.ok(rangesTouch(r(1, 0, 2, 0), r(2, 0, 3, 0)), 'touching counts');
  assert.ok(!rangesTouch(r(1, 0, 1, 5), r(1, 6, 1, 9)));
  assert.deepEqual(unionRange([r(4, 2, 4, 8), r(1, 5, 2, 0), r(4, 1, 6, 3)]), r(1, 5, 6, 3));
  assert.equal(unionRange([]), undefined);
});
