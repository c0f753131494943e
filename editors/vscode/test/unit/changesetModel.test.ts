import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  acceptSummary,
  children,
  decisionArgs,
  describeNode,
  hunkLines,
  nodeView,
  parseReviewQuery,
  pendingChangesets,
  reviewText,
  reviewUriParts,
  showControls,
  type ChangeNode,
} from '../../src/logic/changesetModel';
import type { ChangesetJson } from '../../src/logic/protocol';

// written by the server's own convert.changeset_json (see test/fixtures/README.md)
const FIXTURE: ChangesetJson = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../test/fixtures/changeset.json'), 'utf8'));

test('the tree: changeset → files → hunks of modified files only', () => {
  const root: ChangeNode = { type: 'changeset', changeset: FIXTURE };
  const files = children(root);
  assert.deepEqual(files.map((f) => (f.type === 'file' ? `${f.file.op}:${f.file.path}` : '')), ['modify:app.py', 'create:new.py', 'delete:old.py']);
  const hunks = children(files[0]);
  assert.equal(hunks.length, 2);
  assert.deepEqual(children(files[1]), [], 'a created file is decided as a whole');
  assert.deepEqual(children(hunks[0]), []);
  const view = nodeView(root);
  assert.equal(view.label, 'Shout lines');
  assert.equal(view.description, '3 files · pending');
  assert.equal(view.contextValue, 'changeset');
  assert.equal(nodeView(files[0]).collapsible, true);
  assert.equal(nodeView(files[1]).collapsible, false);
  assert.equal(nodeView(files[2]).icon, 'diff-removed');
});

test('hunk labels name the current lines and count the changed ones', () => {
  const [first, second] = children(children({ type: 'changeset', changeset: FIXTURE })[0]);
  assert.equal(first.type, 'hunk');
  assert.deepEqual([nodeView(first).label, nodeView(first).description], ['line 4', '+1 −1 · pending']);
  assert.deepEqual([nodeView(second).label, nodeView(second).description], ['line 31', '+2 −1 · pending']);
  assert.equal(nodeView(second).contextValue, 'hunk');
  if (second.type === 'hunk') {
    assert.equal(hunkLines({ ...second.hunk, range: { start: { line: 9, character: 0 }, end: { line: 12, character: 0 } } }), 'lines 10–12');
    const decided = { ...second, hunk: { ...second.hunk, status: 'accepted' } };
    assert.equal(nodeView(decided).contextValue, 'decided-hunk');
    assert.equal(nodeView(decided).icon, 'check');
  }
});

test('accept/reject arguments: the changeset, a file, or one hunk of one file', () => {
  const root: ChangeNode = { type: 'changeset', changeset: FIXTURE };
  const file = children(root)[0];
  const hunk = children(file)[1];
  assert.deepEqual(decisionArgs(root), { changesetId: FIXTURE.id, root: '/ws' });
  assert.deepEqual(decisionArgs(file), { changesetId: FIXTURE.id, root: '/ws', path: 'app.py' });
  assert.deepEqual(decisionArgs(hunk), { changesetId: FIXTURE.id, root: '/ws', path: 'app.py', hunks: [1] });
  assert.equal(describeNode(hunk), 'the change at app.py (line 31)');
});

test('review documents: URI parts round-trip, sides give original and proposed text', () => {
  const parts = reviewUriParts({ changesetId: 'abc', path: 'src/a b/ü.py', side: 'proposed' });
  assert.equal(parts.path, '/src/a b/ü.py');
  assert.deepEqual(parseReviewQuery(parts.query), { changesetId: 'abc', path: 'src/a b/ü.py', side: 'proposed' });
  assert.throws(() => parseReviewQuery('changeset=abc&side=left&file=a.py'));
  const [modify, create, remove] = FIXTURE.files;
  assert.match(reviewText(modify, 'original'), /^app line 3$/m);
  assert.match(reviewText(modify, 'proposed'), /^APP LINE 3$/m);
  assert.equal(reviewText(create, 'original'), '');
  assert.equal(reviewText(remove, 'proposed'), '');
});

test('review documents show invisible and bidirectional control characters', () => {
  const trojan = 'access = "user\u202e \u2066// admin"\nz\u200bw\ufeff\n';
  const file = { ...FIXTURE.files[0], proposed: trojan };
  assert.equal(reviewText(file, 'proposed'), 'access = "user<U+202E> <U+2066>// admin"\nz<U+200B>w<U+FEFF>\n');
  assert.equal(showControls('plain text\n'), 'plain text\n');
});

test('only live changesets are pending, newest first', () => {
  const older = { ...FIXTURE, id: 'old', created: '2020-01-01T00:00:00+00:00' };
  const accepted = { ...FIXTURE, id: 'done', status: 'accepted' };
  const partial = { ...FIXTURE, id: 'part', status: 'partially_accepted', created: '2030-01-01T00:00:00+00:00' };
  assert.deepEqual(pendingChangesets([older, accepted, FIXTURE, partial]).map((c) => c.id), ['part', FIXTURE.id, 'old']);
});

test('an accept summary says what was committed and what is left unsaved', () => {
  const text = acceptSummary({ written: ['app.py'], editorOnly: ['b.py'], commitId: '0123456789abcdef', notes: ['hooks skipped'], changeset: FIXTURE });
  assert.equal(text, 'Accepted "Shout lines" — committed 01234567 — unsaved in the editor: b.py (save to keep) — hooks skipped');
});
