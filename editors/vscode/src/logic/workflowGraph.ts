/**
 * The workflow graph the server returns as mermaid text (`agentic.workflowGraph`), drawn as SVG
 * by the extension itself: no mermaid bundle, no network, no script in the webview.
 *
 * Only the flowchart subset LangGraph writes is read: `id(label)` / `id([label]):::class` nodes
 * and `a --> b`, `a -.-> b`, `a -. label .-> b`, `a -- label --> b` edges. Layout is layered
 * top-down: a node's layer is its longest path from the start over forward edges; edges that
 * close a cycle (retries, routes back) are drawn as curves on the right.
 */

import { NODE_STATES, type NodeState } from './protocol';

export interface GraphNode {
  id: string;
  label: string;
  cls: string | null;
  /** The stage's run state, from a `class <ids> <STATE>` line ({@link styleMermaid}). */
  state?: NodeState;
}

export interface GraphEdge {
  from: string;
  to: string;
  label: string;
  dotted: boolean;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export type NodeMark = 'current' | 'ok' | 'failed';

export interface GraphMarks {
  current?: string | null;
  ok?: Iterable<string>;
  failed?: Iterable<string>;
  /** A second, smaller line in a node (a stage's model tokens), by node id. */
  notes?: ReadonlyMap<string, string>;
}

const NODE_RE = /^([A-Za-z_][\w-]*)(\(\[|\[\[|\(\(|\(|\[|\{)(.*?)(\]\)|\]\]|\)\)|\)|\]|\})(?::::([\w-]+))?;?$/;
const EDGE_RE = /^([A-Za-z_][\w-]*)\s*(-->|-\.->|==>|-\.(.*?)\.->|--(.*?)-->)\s*([A-Za-z_][\w-]*);?$/;

/** `class a,b NAME`: mermaid's class assignment. */
const CLASS_RE = /^class\s+([\w,\s-]+?)\s+([A-Za-z_][\w-]*);?$/;

export function cleanLabel(raw: string): string {
  return raw
    .replace(/<[^>]*>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/^["']|["']$/g, '')
    .trim();
}

export function parseMermaid(text: string): Graph {
  const nodes = new Map<string, GraphNode>();
  const edges: GraphEdge[] = [];
  const states = new Map<string, NodeState>();
  let inFrontMatter = false;
  const ensure = (id: string) => {
    if (!nodes.has(id)) {
      nodes.set(id, { id, label: id, cls: null });
    }
  };
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '---') {
      inFrontMatter = !inFrontMatter;
      continue;
    }
    if (inFrontMatter || !line || line.startsWith('%%') || /^(graph|flowchart)\b/.test(line)) {
      continue;
    }
    const assigned = CLASS_RE.exec(line);
    if (assigned) {
      const state = assigned[2] as NodeState;
      if (NODE_STATES.includes(state)) {
        for (const id of assigned[1].split(',')) {
          states.set(id.trim(), state);
        }
      }
      continue;
    }
    if (/^(classDef|class|style|linkStyle|subgraph|end)\b/.test(line)) {
      continue;
    }
    const edge = EDGE_RE.exec(line);
    if (edge) {
      const [, from, arrow, dottedLabel, solidLabel, to] = edge;
      ensure(from);
      ensure(to);
      edges.push({
        from,
        to,
        label: cleanLabel(dottedLabel ?? solidLabel ?? ''),
        dotted: arrow.startsWith('-.'),
      });
      continue;
    }
    const node = NODE_RE.exec(line);
    if (node) {
      const [, id, , label, , cls] = node;
      nodes.set(id, { id, label: cleanLabel(label) || id, cls: cls ?? null });
    }
  }
  for (const [id, state] of states) {
    const node = nodes.get(id);
    if (node) {
      node.state = state;
    }
  }
  return { nodes: [...nodes.values()], edges };
}

/** Mermaid `classDef`s of the run states (for mermaid renderers; the extension's SVG styles
 * them with the theme's colours): READY grey, RUNNING blue, WAITING_INPUT orange, COMPLETED
 * green, FAILED red, PRUNED and SKIPPED dashed and struck through. */
export const STATE_CLASS_DEFS: Record<NodeState, string> = {
  READY: 'fill:#e8e8e8,stroke:#9e9e9e,color:#333',
  RUNNING: 'fill:#cfe2ff,stroke:#0d6efd,stroke-width:3px,color:#052c65',
  WAITING_INPUT: 'fill:#ffe5c2,stroke:#fd7e14,stroke-width:3px,color:#5c2c00',
  COMPLETED: 'fill:#d1e7dd,stroke:#198754,color:#0a3622',
  FAILED: 'fill:#f8d7da,stroke:#dc3545,color:#58151c',
  PRUNED: 'fill:#f4f4f4,stroke:#9e9e9e,stroke-dasharray:5 4,color:#888,text-decoration:line-through',
  SKIPPED: 'fill:#f4f4f4,stroke:#bdbdbd,stroke-dasharray:5 4,color:#999,text-decoration:line-through',
};

function isStateLine(line: string): boolean {
  const t = line.trim();
  const def = /^classDef\s+([A-Za-z_][\w-]*)\b/.exec(t);
  if (def) {
    return NODE_STATES.includes(def[1] as NodeState);
  }
  const assigned = CLASS_RE.exec(t);
  return Boolean(assigned && NODE_STATES.includes(assigned[2] as NodeState));
}

/**
 * The server's mermaid with the run's node states appended: a `classDef` per state used and a
 * `class a,b STATE` line per state (state lines appended before are replaced, so it can be
 * applied again as states change). Stages with an unknown state are left alone.
 */
export function styleMermaid(mermaid: string, states: Readonly<Record<string, string>>): string {
  const kept = mermaid.split(/\r?\n/).filter((line) => !isStateLine(line));
  while (kept.length && !kept[kept.length - 1].trim()) {
    kept.pop();
  }
  const byState = new Map<NodeState, string[]>();
  for (const [stage, state] of Object.entries(states)) {
    if (NODE_STATES.includes(state as NodeState) && /^[A-Za-z_][\w-]*$/.test(stage)) {
      byState.set(state as NodeState, [...(byState.get(state as NodeState) ?? []), stage]);
    }
  }
  if (!byState.size) {
    return kept.join('\n') + '\n';
  }
  const lines = [...kept];
  for (const state of NODE_STATES) {
    const stages = byState.get(state);
    if (stages) {
      lines.push(`\tclassDef ${state} ${STATE_CLASS_DEFS[state]}`);
      lines.push(`\tclass ${stages.join(',')} ${state}`);
    }
  }
  return lines.join('\n') + '\n';
}

/** The CSS class of a node state in the SVG: `state-waiting-input`. */
export function stateClass(state: NodeState): string {
  return `state-${state.toLowerCase().replace(/_/g, '-')}`;
}

export interface PlacedNode extends GraphNode {
  layer: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export type EdgeRoute = 'down' | 'left' | 'right';

export interface Layout {
  nodes: Map<string, PlacedNode>;
  /** `down`: adjacent layers; `left`: skips layers (drawn round the left); `right`: goes back. */
  edges: (GraphEdge & { back: boolean; route: EdgeRoute; lane: number })[];
  width: number;
  height: number;
  /** The x range the nodes occupy (lanes run outside it). */
  contentLeft: number;
  contentRight: number;
}

const NODE_H = 34;
/** Node height when some node carries a note (a second line). */
const NODE_H_NOTE = 50;
const NOTE_CHAR_W = 6.2;
const LAYER_GAP = 70;
const NODE_GAP = 36;
const MARGIN = 30;
const CHAR_W = 7.5;
const LANE_GAP = 26;

function startNode(graph: Graph): string | undefined {
  const start = graph.nodes.find((n) => n.id === '__start__' || n.cls === 'first');
  if (start) {
    return start.id;
  }
  const targets = new Set(graph.edges.map((e) => e.to));
  return graph.nodes.find((n) => !targets.has(n.id))?.id ?? graph.nodes[0]?.id;
}

/** Edges closing a cycle in a depth-first walk from the start (then from any unvisited node). */
function backEdges(graph: Graph): Set<GraphEdge> {
  const out = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    out.set(edge.from, [...(out.get(edge.from) ?? []), edge]);
  }
  const state = new Map<string, 'open' | 'done'>();
  const back = new Set<GraphEdge>();
  const visit = (id: string) => {
    state.set(id, 'open');
    for (const edge of out.get(id) ?? []) {
      const seen = state.get(edge.to);
      if (seen === 'open') {
        back.add(edge);
      } else if (seen === undefined) {
        visit(edge.to);
      }
    }
    state.set(id, 'done');
  };
  const start = startNode(graph);
  if (start) {
    visit(start);
  }
  for (const node of graph.nodes) {
    if (!state.has(node.id)) {
      visit(node.id);
    }
  }
  return back;
}

/** `notes`: nodes' second lines (they widen their nodes, and make every node taller). */
export function layoutGraph(graph: Graph, notes: ReadonlyMap<string, string> = new Map()): Layout {
  const nodeH = [...notes.values()].some(Boolean) ? NODE_H_NOTE : NODE_H;
  const back = backEdges(graph);
  const forward = graph.edges.filter((e) => !back.has(e));
  const layer = new Map<string, number>(graph.nodes.map((n) => [n.id, 0]));
  // longest path over a DAG: relax |V| times (graphs here are a dozen nodes)
  for (let i = 0; i < graph.nodes.length; i++) {
    let changed = false;
    for (const edge of forward) {
      const next = (layer.get(edge.from) ?? 0) + 1;
      if (next > (layer.get(edge.to) ?? 0)) {
        layer.set(edge.to, next);
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
  }
  const end = graph.nodes.find((n) => n.id === '__end__' || n.cls === 'last');
  const deepest = Math.max(0, ...layer.values());
  if (end) {
    layer.set(end.id, Math.max(layer.get(end.id) ?? 0, deepest));
  }
  const routed = graph.edges.map((e) => {
    const from = layer.get(e.from) ?? 0;
    const to = layer.get(e.to) ?? 0;
    const route: EdgeRoute = back.has(e) || to <= from ? 'right' : to - from > 1 ? 'left' : 'down';
    return { ...e, back: back.has(e), route, lane: 0 };
  });
  let lanes = { left: 0, right: 0, down: 0 };
  for (const edge of routed) {
    if (edge.route !== 'down') {
      lanes = { ...lanes, [edge.route]: lanes[edge.route] + 1 };
      edge.lane = lanes[edge.route];
    }
  }
  // nodes with edges round the left go leftmost in their row, those with routes back rightmost,
  // so those edges' horizontal runs do not cross their neighbours
  const side = new Map<string, number>();
  for (const edge of routed) {
    const score = edge.route === 'left' ? -1 : edge.route === 'right' ? 1 : 0;
    for (const id of [edge.from, edge.to]) {
      const seen = side.get(id) ?? 0;
      side.set(id, seen === -1 || score === -1 ? -1 : Math.max(seen, score));
    }
  }
  const layers: GraphNode[][] = [];
  for (const node of graph.nodes) {
    const l = layer.get(node.id) ?? 0;
    (layers[l] ??= []).push(node);
  }
  for (const row of layers) {
    row?.sort((a, b) => (side.get(a.id) ?? 0) - (side.get(b.id) ?? 0));
  }
  const widthOf = (n: GraphNode) =>
    Math.max(70, Math.round(n.label.length * CHAR_W + 28), Math.round((notes.get(n.id) ?? '').length * NOTE_CHAR_W + 20));
  const rowWidths = layers.map((row) => (row ?? []).reduce((s, n) => s + widthOf(n), 0) + NODE_GAP * ((row ?? []).length - 1));
  const inner = Math.max(0, ...rowWidths);
  const leftRoom = lanes.left ? 90 + lanes.left * LANE_GAP : 0;
  const backRoom = lanes.right ? 90 + lanes.right * LANE_GAP : 0;
  const width = inner + 2 * MARGIN + leftRoom + backRoom;
  const placed = new Map<string, PlacedNode>();
  layers.forEach((row, l) => {
    let x = MARGIN + leftRoom + (inner - rowWidths[l]) / 2;
    for (const node of row ?? []) {
      const w = widthOf(node);
      placed.set(node.id, { ...node, layer: l, x, y: MARGIN + l * (nodeH + LAYER_GAP), width: w, height: nodeH });
      x += w + NODE_GAP;
    }
  });
  const height = 2 * MARGIN + layers.length * nodeH + Math.max(0, layers.length - 1) * LAYER_GAP;
  return {
    nodes: placed,
    edges: routed,
    width,
    height,
    contentLeft: MARGIN + leftRoom,
    contentRight: MARGIN + leftRoom + inner,
  };
}

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function markOf(id: string, marks: GraphMarks): NodeMark | null {
  if (marks.current === id) {
    return 'current';
  }
  if (marks.failed && [...marks.failed].includes(id)) {
    return 'failed';
  }
  if (marks.ok && [...marks.ok].includes(id)) {
    return 'ok';
  }
  return null;
}

type Point = [number, number];

function bezier([p0, p1, p2, p3]: [Point, Point, Point, Point], t: number): Point {
  const u = 1 - t;
  const at = (i: 0 | 1) => u * u * u * p0[i] + 3 * u * u * t * p1[i] + 3 * u * t * t * p2[i] + t * t * t * p3[i];
  return [at(0), at(1)];
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** The graph as a standalone SVG element; `marks` colour the current and finished stages. */
export function renderSvg(graph: Graph, marks: GraphMarks = {}): string {
  const notes = marks.notes ?? new Map<string, string>();
  const layout = layoutGraph(graph, notes);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="workflow-graph" width="${layout.width}" ` +
      `height="${layout.height}" viewBox="0 0 ${layout.width} ${layout.height}" role="img" ` +
      `aria-label="workflow graph">`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" ' +
      'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" ' +
      'class="arrowhead"/></marker></defs>',
  );
  for (const edge of layout.edges) {
    const a = layout.nodes.get(edge.from);
    const b = layout.nodes.get(edge.to);
    if (!a || !b) {
      continue;
    }
    const cls = `edge${edge.dotted ? ' dotted' : ''}${edge.back ? ' back' : ''}`;
    let d: string;
    let label: { x: number; y: number; anchor: string };
    if (edge.route === 'down') {
      const points: [Point, Point, Point, Point] = [
        [a.x + a.width / 2, a.y + a.height],
        [a.x + a.width / 2, (a.y + a.height + b.y) / 2],
        [b.x + b.width / 2, (a.y + a.height + b.y) / 2],
        [b.x + b.width / 2, b.y],
      ];
      const [p0, p1, p2, p3] = points;
      d = `M ${p0[0]} ${p0[1]} C ${p1[0]} ${p1[1]}, ${p2[0]} ${p2[1]}, ${p3[0]} ${p3[1]}`;
      const [lx, ly] = bezier(points, 0.6);
      label = { x: lx, y: ly, anchor: 'middle' };
    } else {
      const right = edge.route === 'right';
      const lane = (edge.lane - 1) * LANE_GAP;
      const x = right ? layout.contentRight + 24 + lane : layout.contentLeft - 14 - lane;
      const ax = right ? a.x + a.width : a.x;
      const bx = right ? b.x + b.width : b.x;
      const y1 = a.y + a.height / 2 + (right ? 5 : -5);
      const y2 = b.y + b.height / 2 + (right ? -5 : 5);
      const r = Math.min(8, Math.abs(y2 - y1) / 2);
      const sy = y2 > y1 ? 1 : -1;
      const sx = right ? 1 : -1;
      d =
        `M ${ax} ${y1} L ${x - sx * r} ${y1} Q ${x} ${y1} ${x} ${y1 + sy * r} ` +
        `L ${x} ${y2 - sy * r} Q ${x} ${y2} ${x - sx * r} ${y2} L ${bx} ${y2}`;
      label = { x: x + sx * 4, y: (y1 + y2) / 2 + ((edge.lane % 3) - 1) * 13 + 4, anchor: right ? 'start' : 'end' };
    }
    parts.push(
      `<path class="${cls}" d="${d}" marker-end="url(#arrow)" data-from="${escapeXml(edge.from)}" ` +
        `data-to="${escapeXml(edge.to)}"/>`,
    );
    if (edge.label) {
      parts.push(
        `<text class="edge-label" x="${round(label.x)}" y="${round(label.y)}" ` +
          `text-anchor="${label.anchor}">${escapeXml(edge.label)}</text>`,
      );
    }
  }
  for (const node of layout.nodes.values()) {
    const mark = markOf(node.id, marks);
    const terminal = node.id === '__start__' || node.id === '__end__';
    const cls = ['node', terminal ? 'terminal' : '', mark ?? '', node.state ? stateClass(node.state) : '']
      .filter(Boolean)
      .join(' ');
    const rx = terminal ? node.height / 2 : 6;
    const label = node.label.replace(/^__(start|end)__$/, '$1');
    const note = notes.get(node.id);
    const cx = node.x + node.width / 2;
    const labelY = note ? node.y + 20 : node.y + node.height / 2 + 4;
    const state = node.state ? ` data-state="${node.state}"` : '';
    parts.push(
      `<g class="${cls}" data-node="${escapeXml(node.id)}"${state}>` +
        `<rect x="${node.x}" y="${node.y}" width="${node.width}" height="${node.height}" rx="${rx}"/>` +
        `<text x="${cx}" y="${labelY}" text-anchor="middle">${escapeXml(label)}</text>` +
        (note ? `<text class="note" x="${cx}" y="${node.y + 38}" text-anchor="middle">${escapeXml(note)}</text>` : '') +
        '</g>',
    );
  }
  parts.push('</svg>');
  return parts.join('\n');
}

/** Marks from a run's stage history: the running stage, and the last verdict of each other. */
export function marksFromStages(
  current: string | null,
  finished: { stage: string; ok: boolean }[],
): GraphMarks {
  const verdict = new Map<string, boolean>();
  for (const f of finished) {
    verdict.set(f.stage, f.ok);
  }
  const ok: string[] = [];
  const failed: string[] = [];
  for (const [stage, good] of verdict) {
    if (stage !== current) {
      (good ? ok : failed).push(stage);
    }
  }
  return { current, ok, failed };
}
