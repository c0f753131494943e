/**
 * The `context` of a workflow run started from the editor (`agentic.runWorkflow`): the document,
 * the selection, the cursor and the diagnostics there, as plain LSP data (the server reads the
 * code itself; the client never sends it), and the task texts of "Fix this" and "Explain this".
 *
 * The inputs are shaped like VS Code's objects (a `vscode.Range` or `vscode.Diagnostic` fits)
 * but are copied field by field: VS Code's `Range` serializes as `[start, end]`, its diagnostic
 * severities count from 0 and its codes may be `{value, target}`.
 */

import { DIAGNOSTIC_SOURCE, type DiagnosticJson, type EditorContextArg, type Position, type Range } from './protocol';

/** A diagnostic as VS Code has it: `severity` 0 error, 1 warning, 2 information, 3 hint. */
export interface DiagnosticLike {
  range: Range;
  message: string;
  severity?: number;
  source?: string;
  code?: string | number | { value: string | number };
}

export interface EditorPlace {
  /** The document's URI (`file:` only: the server refuses any other). */
  uri: string;
  /** The selection (an empty one counts as none). */
  selection?: Range | null;
  cursor?: Position | null;
  /** All the document's diagnostics; only those where the user is are sent. */
  diagnostics?: readonly DiagnosticLike[];
}

/** The server takes at most this many. */
export const MAX_DIAGNOSTICS = 1000;
const MAX_TASK_MESSAGE = 200;

export function plainPosition(p: Position): Position {
  return { line: p.line, character: p.character };
}

export function plainRange(r: Range): Range {
  return { start: plainPosition(r.start), end: plainPosition(r.end) };
}

export function comparePositions(a: Position, b: Position): number {
  return a.line - b.line || a.character - b.character;
}

export function isEmptyRange(r: Range): boolean {
  return comparePositions(r.start, r.end) === 0;
}

/** The ranges share a position (touching counts: a diagnostic that ends where the selection
 * starts is about that code too). */
export function rangesTouch(a: Range, b: Range): boolean {
  return comparePositions(a.start, b.end) <= 0 && comparePositions(b.start, a.end) <= 0;
}

/** The smallest range holding all of them (undefined for none). */
export function unionRange(ranges: readonly Range[]): Range | undefined {
  if (!ranges.length) {
    return undefined;
  }
  let start = ranges[0].start;
  let end = ranges[0].end;
  for (const r of ranges.slice(1)) {
    start = comparePositions(r.start, start) < 0 ? r.start : start;
    end = comparePositions(r.end, end) > 0 ? r.end : end;
  }
  return plainRange({ start, end });
}

/** The extension's own hints on pending changes are not problems to fix. */
export function isOwnDiagnostic(d: DiagnosticLike): boolean {
  return d.source === DIAGNOSTIC_SOURCE;
}

/** A VS Code diagnostic as an LSP `Diagnostic` (severity 1–4, a plain code). */
export function toDiagnosticJson(d: DiagnosticLike): DiagnosticJson {
  const json: DiagnosticJson = { range: plainRange(d.range), message: d.message };
  if (typeof d.severity === 'number' && d.severity >= 0 && d.severity <= 3) {
    json.severity = (d.severity + 1) as DiagnosticJson['severity'];
  }
  if (d.source) {
    json.source = d.source;
  }
  const code = typeof d.code === 'object' && d.code !== null ? d.code.value : d.code;
  if (typeof code === 'string' || typeof code === 'number') {
    json.code = code;
  }
  return json;
}

/** The diagnostics where the user is: touching the selection, else on the cursor's line. */
export function diagnosticsAt(
  diagnostics: readonly DiagnosticLike[],
  selection: Range | null | undefined,
  cursor: Position | null | undefined,
): DiagnosticLike[] {
  const mine = diagnostics.filter((d) => !isOwnDiagnostic(d));
  if (selection && !isEmptyRange(selection)) {
    return mine.filter((d) => rangesTouch(d.range, selection));
  }
  const at = cursor ?? selection?.start;
  if (!at) {
    return [];
  }
  return mine.filter((d) => d.range.start.line <= at.line && at.line <= d.range.end.line);
}

/** The `context` argument: the document, a non-empty selection, the cursor, and the
 * diagnostics where the user is (errors first, at most {@link MAX_DIAGNOSTICS}). */
export function buildEditorContext(place: EditorPlace): EditorContextArg {
  const context: EditorContextArg = { uri: place.uri };
  const selection = place.selection && !isEmptyRange(place.selection) ? plainRange(place.selection) : undefined;
  if (selection) {
    context.selection = selection;
  }
  if (place.cursor) {
    context.cursor = plainPosition(place.cursor);
  }
  const found = diagnosticsAt(place.diagnostics ?? [], selection, place.cursor)
    .map(toDiagnosticJson)
    .sort((a, b) => (a.severity ?? 5) - (b.severity ?? 5))
    .slice(0, MAX_DIAGNOSTICS);
  if (found.length) {
    context.diagnostics = found;
  }
  return context;
}

/**
 * Where "Fix this" points: the selection when there is one, else the lines of the diagnostics
 * at the cursor (so the code they are about leads the agents' context), else only the cursor.
 */
export function fixPlace(place: EditorPlace): EditorPlace {
  if (place.selection && !isEmptyRange(place.selection)) {
    return place;
  }
  const at = diagnosticsAt(place.diagnostics ?? [], place.selection, place.cursor);
  return { ...place, selection: unionRange(at.map((d) => d.range)) ?? null, cursor: place.cursor ?? place.selection?.start };
}

function oneLine(text: string, max = MAX_TASK_MESSAGE): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** "Fix: <the first diagnostic's message>" (and how many more), or a plain request without one. */
export function fixTask(diagnostics: readonly { message: string }[]): string {
  if (!diagnostics.length) {
    return 'Fix the problem in the selected code';
  }
  const more = diagnostics.length - 1;
  const rest = more ? ` (and ${more} more diagnostic${more === 1 ? '' : 's'} there)` : '';
  return `Fix: ${oneLine(diagnostics[0].message)}${rest}`;
}

export function explainTask(context: EditorContextArg): string {
  return context.selection ? 'Explain the selected code' : 'Explain the code at the cursor';
}

/** "src/app.py lines 12-18 · 2 diagnostics" for the run log (`path`: the document's path as
 * the user knows it). */
export function describeContext(context: EditorContextArg, path: string): string {
  const parts = [path];
  if (context.selection) {
    const first = context.selection.start.line + 1;
    const end = context.selection.end;
    const last = end.character === 0 && end.line > context.selection.start.line ? end.line : end.line + 1;
    parts.push(first === last ? `line ${first}` : `lines ${first}-${last}`);
  } else if (context.cursor) {
    parts.push(`cursor at line ${context.cursor.line + 1}`);
  }
  const n = context.diagnostics?.length ?? 0;
  if (n) {
    parts.push(`${n} diagnostic${n === 1 ? '' : 's'}`);
  }
  return parts.join(' · ');
}
