import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  answerNavigation,
  hoverMarkdown,
  navigationCapability,
  toLocations,
  type WirePosition,
} from '../../src/logic/editorNavigation';

const range = (line: number, start: number, end: number) => ({
  start: { line, character: start },
  end: { line, character: end },
});

/** VS Code's objects: a Uri whose toString() is the URI, positions with getters. */
class FakeUri {
  constructor(private readonly text: string) {}
  toString(): string {
    return this.text;
  }
}
class FakePosition {
  constructor(
    private readonly l: number,
    private readonly c: number,
  ) {}
  get line(): number {
    return this.l;
  }
  get character(): number {
    return this.c;
  }
}

test('the capability lists the four methods the extension answers', () => {
  assert.deepEqual(navigationCapability(), {
    agentic: {
      editorNavigation: [
        'textDocument/definition',
        'textDocument/references',
        'textDocument/implementation',
        'textDocument/hover',
      ],
    },
  });
});

test('each method runs its VS Code provider command at the document and position', async () => {
  const calls: Array<[string, string, WirePosition]> = [];
  const execute = async (command: string, uri: string, position: WirePosition) => {
    calls.push([command, uri, position]);
    return [{ uri: new FakeUri('file:///w/a.ts'), range: { start: new FakePosition(1, 2), end: new FakePosition(1, 6) } }];
  };
  for (const method of ['textDocument/definition', 'textDocument/references', 'textDocument/implementation']) {
    const answer = await answerNavigation(
      { method, textDocument: { uri: 'file:///w/b.ts' }, position: { line: 4, character: 8 } },
      execute,
    );
    assert.deepEqual(answer, { source: 'vscode', locations: [{ uri: 'file:///w/a.ts', range: range(1, 2, 6) }] });
  }
  assert.deepEqual(
    calls.map((c) => c[0]),
    ['vscode.executeDefinitionProvider', 'vscode.executeReferenceProvider', 'vscode.executeImplementationProvider'],
  );
  assert.deepEqual(calls[0].slice(1), ['file:///w/b.ts', { line: 4, character: 8 }]);
});

test('LocationLinks become their target selection; nothing found is an empty list', () => {
  const link = { targetUri: 'file:///w/a.ts', targetRange: range(0, 0, 20), targetSelectionRange: range(1, 4, 8) };
  assert.deepEqual(toLocations([link]), [{ uri: 'file:///w/a.ts', range: range(1, 4, 8) }]);
  assert.deepEqual(toLocations({ uri: 'file:///w/c.ts', range: range(2, 0, 1) }), [
    { uri: 'file:///w/c.ts', range: range(2, 0, 1) },
  ]);
  assert.deepEqual(toLocations(undefined), []);
  assert.deepEqual(toLocations([]), []);
});

test('hover answers join every provider markdown, code as fenced blocks', async () => {
  const hovers = [{ contents: [{ value: '**A.save**' }, { language: 'python', value: 'def save(self)' }] }, { contents: ['plain'] }];
  assert.equal(hoverMarkdown(hovers), '**A.save**\n\n---\n\n```python\ndef save(self)\n```\n\n---\n\nplain');
  const answer = await answerNavigation(
    { method: 'textDocument/hover', textDocument: { uri: 'file:///w/b.ts' }, position: { line: 0, character: 0 } },
    async (command) => (command === 'vscode.executeHoverProvider' ? hovers : undefined),
  );
  assert.deepEqual(answer, { source: 'vscode', hover: hoverMarkdown(hovers) });
});

test('an unknown method is refused (the server notes the error and falls back)', async () => {
  await assert.rejects(
    answerNavigation({ method: 'textDocument/rename', textDocument: { uri: 'file:///w/b.ts' }, position: { line: 0, character: 0 } }, async () => []),
    /cannot answer textDocument\/rename/,
  );
});
