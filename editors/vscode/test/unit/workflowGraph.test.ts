import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { graphHtml, runMermaid } from '../../src/logic/graphPage';
import { newRun } from '../../src/logic/runTracker';
import { cleanLabel, layoutGraph, marksFromStages, parseMermaid, renderSvg, styleMermaid } from '../../src/logic/workflowGraph';

const FIXTURES = path.join(__dirname, '../../../test/fixtures');
const BUG_FIX = fs.readFileSync(path.join(FIXTURES, 'bug_fix.mmd'), 'utf8');
const FEATURE = fs.readFileSync(path.join(FIXTURES, 'feature_with_iterative_testing.mmd'), 'utf8');

test("the server's mermaid parses into its nodes and labelled edges", () => {
  const graph = parseMermaid(BUG_FIX);
  assert.deepEqual(graph.nodes.map((n) => n.id), ['__start__', 'reproduce', 'fix', 'adaptive_retrieval', 'DONE', 'ABORT', '__end__']);
  assert.equal(graph.nodes[0].label, '__start__');
  assert.equal(graph.nodes[0].cls, 'first');
  const edge = (from: string, to: string) => graph.edges.find((e) => e.from === from && e.to === to);
  assert.deepEqual(edge('fix', 'DONE'), { from: 'fix', to: 'DONE', label: 'success', dotted: true });
  assert.deepEqual(edge('__start__', 'reproduce'), { from: '__start__', to: 'reproduce', label: '', dotted: false });
  assert.deepEqual(edge('adaptive_retrieval', 'fix'), { from: 'adaptive_retrieval', to: 'fix', label: '', dotted: true });
  assert.equal(graph.edges.length, 10);
  assert.equal(cleanLabel('<p>a&nbsp;&amp;&nbsp;b</p>'), 'a & b');
});

test('layers run top-down from start to end; routes back are drawn as back edges', () => {
  for (const text of [BUG_FIX, FEATURE]) {
    const layout = layoutGraph(parseMermaid(text));
    const start = layout.nodes.get('__start__')!;
    const end = layout.nodes.get('__end__')!;
    const layers = [...layout.nodes.values()].map((n) => n.layer);
    assert.equal(start.layer, 0);
    assert.equal(end.layer, Math.max(...layers));
    for (const edge of layout.edges.filter((e) => !e.back)) {
      assert.ok(layout.nodes.get(edge.from)!.layer < layout.nodes.get(edge.to)!.layer, `${edge.from} above ${edge.to}`);
    }
    for (const a of layout.nodes.values()) {
      for (const b of layout.nodes.values()) {
        if (a !== b && a.layer === b.layer) {
          assert.ok(a.x + a.width <= b.x || b.x + b.width <= a.x, `${a.id} and ${b.id} overlap`);
        }
      }
      assert.ok(a.x >= 0 && a.x + a.width <= layout.width && a.y + a.height <= layout.height);
    }
  }
  const feature = layoutGraph(parseMermaid(FEATURE));
  const back = feature.edges.filter((e) => e.back).map((e) => `${e.from}->${e.to}`);
  assert.ok(back.includes('test->implement') || back.includes('implement->test') || back.includes('adaptive_retrieval->implement'), back.join(','));
  const order = ['implement', 'test', 'security', 'lint'].map((id) => feature.nodes.get(id)!.layer);
  assert.deepEqual([...order].sort((a, b) => a - b), order, 'the stages appear in pipeline order');
});

test('the SVG marks the running stage and the finished ones, and escapes labels', () => {
  const marks = marksFromStages('fix', [
    { stage: 'reproduce', ok: false },
    { stage: 'fix', ok: false },
  ]);
  assert.deepEqual(marks, { current: 'fix', ok: [], failed: ['reproduce'] });
  const svg = renderSvg(parseMermaid(BUG_FIX), marks);
  assert.equal((svg.match(/<g class="node/g) ?? []).length, 7);
  assert.match(svg, /<g class="node current" data-node="fix">/);
  assert.match(svg, /<g class="node failed" data-node="reproduce">/);
  assert.match(svg, /<g class="node" data-node="DONE">/);
  assert.equal((svg.match(/<path class="edge/g) ?? []).length, 10);
  assert.match(svg, />success<\/text>/);
  const hostile = renderSvg(parseMermaid('graph TD;\n  a("<script>x</script>")\n  a --> b;'));
  assert.doesNotMatch(hostile, /<script>/);
});

test('the webview page has a strict CSP, no script, and the mermaid source', () => {
  const html = graphHtml({ title: 'Run <1>', subtitle: 'running fix', mermaid: BUG_FIX, marks: { current: 'fix' }, cspSource: 'vscode-resource:' });
  assert.match(html, /default-src 'none'/);
  assert.doesNotMatch(html, /<script/);
  assert.match(html, /Run &lt;1&gt;/);
  assert.match(html, /<svg /);
  assert.match(html, /&lt;p&gt;__start__&lt;\/p&gt;/);
  assert.match(graphHtml({ title: 't', subtitle: '', mermaid: '', marks: {}, cspSource: '' }), /returned no graph/);
});

test('edges that skip a layer run round the left, routes back round the right, all in the picture', () => {
  const graph = parseMermaid(FEATURE);
  const layout = layoutGraph(graph);
  const layerOf = (id: string) => layout.nodes.get(id)!.layer;
  const routes = new Set<string>();
  for (const edge of layout.edges) {
    const [a, b] = [layerOf(edge.from), layerOf(edge.to)];
    routes.add(edge.route);
    if (edge.route === 'down') {
      assert.equal(b, a + 1, `${edge.from}->${edge.to}`);
    } else if (edge.route === 'left') {
      assert.ok(b > a + 1, `${edge.from}->${edge.to}`);
    } else {
      assert.ok(b <= a, `${edge.from}->${edge.to}`);
    }
  }
  assert.deepEqual([...routes].sort(), ['down', 'left', 'right']);
  const svg = renderSvg(graph);
  for (const match of svg.matchAll(/<text class="edge-label" x="([\d.-]+)" y="([\d.-]+)" text-anchor="(\w+)">([^<]*)</g)) {
    const [x, y, anchor, text] = [Number(match[1]), Number(match[2]), match[3], match[4]];
    const width = text.length * 6;
    const left = anchor === 'end' ? x - width : anchor === 'middle' ? x - width / 2 : x;
    assert.ok(left >= 0 && left + width <= layout.width && y > 0 && y < layout.height, `label ${text} at ${x},${y}`);
  }
});

test("a node's note (its stage's tokens) is a second line, and the node grows to hold it", () => {
  const graph = parseMermaid(BUG_FIX);
  const notes = new Map([['fix', '12 calls · 123.4k + 45.6k tok, a long note']]);
  const plain = layoutGraph(graph);
  const noted = layoutGraph(graph, notes);
  assert.ok(noted.nodes.get('fix')!.width > plain.nodes.get('fix')!.width);
  assert.ok(noted.nodes.get('reproduce')!.height > plain.nodes.get('reproduce')!.height);
  const svg = renderSvg(graph, { ok: ['fix'], notes });
  assert.match(svg, /<g class="node ok" data-node="fix">.*<text class="note"[^>]*>12 calls · 123.4k \+ 45.6k tok, a long note<\/text><\/g>/);
  assert.equal((svg.match(/class="note"/g) ?? []).length, 1);
  assert.doesNotMatch(renderSvg(graph, {}), /class="note"/);
});

test('node states are appended to the mermaid as classDef and class lines, replaced when they change', () => {
  const states = { reproduce: 'COMPLETED', fix: 'RUNNING', adaptive_retrieval: 'SKIPPED', 'bad id;': 'READY', DONE: 'nonsense' };
  const styled = styleMermaid(BUG_FIX, states);
  assert.ok(styled.startsWith(BUG_FIX.trimEnd()), 'the server text is kept as it is');
  const added = styled.slice(BUG_FIX.trimEnd().length).trim().split('\n').map((l) => l.trim());
  assert.deepEqual(added, [
    'classDef RUNNING fill:#cfe2ff,stroke:#0d6efd,stroke-width:3px,color:#052c65',
    'class fix RUNNING',
    'classDef COMPLETED fill:#d1e7dd,stroke:#198754,color:#0a3622',
    'class reproduce COMPLETED',
    'classDef SKIPPED fill:#f4f4f4,stroke:#bdbdbd,stroke-dasharray:5 4,color:#999,text-decoration:line-through',
    'class adaptive_retrieval SKIPPED',
  ]);
  const again = styleMermaid(styled, { reproduce: 'COMPLETED', fix: 'WAITING_INPUT', adaptive_retrieval: 'PRUNED' });
  assert.doesNotMatch(again, /RUNNING|SKIPPED/);
  assert.match(again, /class fix WAITING_INPUT/);
  assert.equal(styleMermaid(again, {}), BUG_FIX.trimEnd() + '\n', 'no states: the server text');

  const graph = parseMermaid(again);
  const state = (id: string) => graph.nodes.find((n) => n.id === id)?.state;
  assert.deepEqual([state('reproduce'), state('fix'), state('adaptive_retrieval'), state('DONE')], ['COMPLETED', 'WAITING_INPUT', 'PRUNED', undefined]);
  assert.equal(graph.nodes.length, parseMermaid(BUG_FIX).nodes.length, 'class lines add no nodes');
  const svg = renderSvg(graph);
  assert.match(svg, /<g class="node state-waiting-input" data-node="fix" data-state="WAITING_INPUT">/);
  assert.match(svg, /<g class="node state-pruned" data-node="adaptive_retrieval" data-state="PRUNED">/);
  assert.match(svg, /<g class="node state-completed" data-node="reproduce" data-state="COMPLETED">/);
});

test("a run's graph page takes its node states; without them, the verdicts", () => {
  const run = newRun('r1');
  run.mermaid = BUG_FIX;
  assert.equal(runMermaid(run), BUG_FIX, 'no states yet');
  run.nodeStates = { reproduce: 'FAILED', fix: 'READY' };
  const html = graphHtml({ title: 't', subtitle: '', mermaid: runMermaid(run), marks: {}, cspSource: '' });
  assert.match(html, /class="node state-failed" data-node="reproduce"/);
  assert.match(html, /class="node state-ready" data-node="fix"/);
  assert.match(html, /\.node\.state-pruned text, \.node\.state-skipped text \{ text-decoration: line-through/);
  assert.match(html, /waits for your review/, 'the legend names the states');
  assert.match(html, /class fix READY/, 'the mermaid source shows them too');
  const plain = graphHtml({ title: 't', subtitle: '', mermaid: BUG_FIX, marks: { current: 'fix' }, cspSource: '' });
  assert.match(plain, /running now/);
  assert.doesNotMatch(plain, /<i class="s-waiting">/);
});
