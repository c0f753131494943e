/**
 * Pending changes as a tree (changesets → files → hunks), the arguments of accept/reject for
 * any node, and the virtual documents (original / proposed text) of the diff review.
 */

import type { ChangesetJson, DecisionArgs, FileChangeJson, HunkJson } from './protocol';
import { LIVE_STATUSES } from './protocol';

export const REVIEW_SCHEME = 'agentic-review';

export type ChangeNode =
  | { type: 'changeset'; changeset: ChangesetJson }
  | { type: 'file'; changeset: ChangesetJson; file: FileChangeJson }
  | { type: 'hunk'; changeset: ChangesetJson; file: FileChangeJson; hunk: HunkJson };

export interface NodeView {
  label: string;
  description: string;
  tooltip: string;
  /** Drives the tree item's context menu (`viewItem == …` in package.json). */
  contextValue: string;
  collapsible: boolean;
  icon: string;
}

export function isLive(changeset: ChangesetJson): boolean {
  return LIVE_STATUSES.has(changeset.status);
}

/** Live changesets, newest first. */
export function pendingChangesets(all: ChangesetJson[]): ChangesetJson[] {
  return all.filter(isLive).sort((a, b) => b.created.localeCompare(a.created));
}

/** "line 4" or "lines 31–32": the current lines a hunk replaces (where it inserts, if none). */
export function hunkLines(hunk: HunkJson): string {
  const first = hunk.range.start.line + 1;
  const count = hunk.range.end.line - hunk.range.start.line + (hunk.range.end.character > 0 ? 1 : 0);
  return count <= 1 ? `line ${first}` : `lines ${first}–${first + count - 1}`;
}

export function hunkStats(hunk: HunkJson): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of hunk.lines) {
    if (line.startsWith('+')) {
      added += 1;
    } else if (line.startsWith('-')) {
      removed += 1;
    }
  }
  return { added, removed };
}

function undecidedFile(file: FileChangeJson): boolean {
  return file.pendingHunks.length > 0 || file.status === 'pending';
}

const OP_ICONS: Record<string, string> = {
  modify: 'diff-modified',
  create: 'diff-added',
  delete: 'diff-removed',
  rename: 'diff-renamed',
};

export function nodeView(node: ChangeNode): NodeView {
  if (node.type === 'changeset') {
    const cs = node.changeset;
    const files = cs.files.length;
    const stale = cs.stale.length ? ' · stale' : '';
    const iteration = cs.iteration ? ` · iteration ${cs.iteration + 1}` : '';
    return {
      label: cs.title || cs.id,
      description: `${files} file${files === 1 ? '' : 's'} · ${cs.status}${iteration}${stale}`,
      tooltip: [cs.title, cs.summary, `id ${cs.id}, run ${cs.runId}`, ...cs.notes].filter(Boolean).join('\n'),
      contextValue: cs.stale.length ? 'changeset-stale' : 'changeset',
      collapsible: true,
      icon: cs.stale.length ? 'warning' : 'git-pull-request',
    };
  }
  if (node.type === 'file') {
    const f = node.file;
    const target = f.newPath ? ` → ${f.newPath}` : '';
    const flags = f.flags.length ? ` · ⚠ ${f.flags.join(', ')}` : '';
    const decided = undecidedFile(f) ? '' : 'decided-';
    return {
      label: `${f.path}${target}`,
      description: `${f.op} · ${f.status}${f.stale ? ' · stale' : ''}${flags}`,
      tooltip: [f.reason, f.author.agent || f.author.stage ? `by ${f.author.agent || f.author.stage}` : '']
        .filter(Boolean)
        .join('\n'),
      contextValue: `${decided}file`,
      collapsible: f.op === 'modify' && (f.hunks === undefined || f.hunks.length > 0),
      icon: OP_ICONS[f.op] ?? 'file',
    };
  }
  const h = node.hunk;
  const { added, removed } = hunkStats(h);
  return {
    label: hunkLines(h),
    description: `+${added} −${removed} · ${h.status}`,
    tooltip: h.lines.join(''),
    contextValue: h.status === 'pending' ? 'hunk' : 'decided-hunk',
    collapsible: false,
    icon: h.status === 'accepted' ? 'check' : h.status === 'rejected' ? 'close' : 'circle-outline',
  };
}

export function children(node: ChangeNode): ChangeNode[] {
  if (node.type === 'changeset') {
    return node.changeset.files.map((file) => ({ type: 'file', changeset: node.changeset, file }));
  }
  if (node.type === 'file' && node.file.op === 'modify') {
    return (node.file.hunks ?? []).map((hunk) => ({
      type: 'hunk',
      changeset: node.changeset,
      file: node.file,
      hunk,
    }));
  }
  return [];
}

/** accept/reject arguments for a node: the changeset, one file, or one hunk of a file. */
export function decisionArgs(node: ChangeNode): DecisionArgs {
  const base: DecisionArgs = { changesetId: node.changeset.id, root: node.changeset.root };
  if (node.type === 'changeset') {
    return base;
  }
  if (node.type === 'file') {
    return { ...base, path: node.file.path };
  }
  return { ...base, path: node.file.path, hunks: [node.hunk.index] };
}

export function describeNode(node: ChangeNode): string {
  if (node.type === 'changeset') {
    return `changeset "${node.changeset.title}"`;
  }
  if (node.type === 'file') {
    return `${node.file.path} of "${node.changeset.title}"`;
  }
  return `the change at ${node.file.path} (${hunkLines(node.hunk)})`;
}

// -- review documents -----------------------------------------------------------------------------

export type ReviewSide = 'original' | 'proposed';

export interface ReviewRef {
  changesetId: string;
  path: string;
  side: ReviewSide;
}

/** The path and query of a review document URI (`agentic-review:/<path>?…`). */
export function reviewUriParts(ref: ReviewRef): { path: string; query: string } {
  const query = new URLSearchParams({ changeset: ref.changesetId, side: ref.side, file: ref.path });
  const display = ref.path.startsWith('/') ? ref.path : `/${ref.path}`;
  return { path: display, query: query.toString() };
}

export function parseReviewQuery(query: string): ReviewRef {
  const params = new URLSearchParams(query);
  const changesetId = params.get('changeset');
  const side = params.get('side');
  const path = params.get('file');
  if (!changesetId || !path || (side !== 'original' && side !== 'proposed')) {
    throw new Error(`not an agentic review document: ?${query}`);
  }
  return { changesetId, path, side };
}

/** Bidirectional override/isolate and zero-width characters (Trojan Source). */
const CONTROLS = /[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff]/g;

/** `text` with every invisible or bidirectional control character shown as `<U+XXXX>`. */
export function showControls(text: string): string {
  return text.replace(CONTROLS, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`);
}

/** The text a review document shows (read-only; accepts apply the server's edits, not this). */
export function reviewText(file: FileChangeJson, side: ReviewSide): string {
  const text = side === 'original' ? file.original : file.proposed;
  return showControls(text ?? '');
}

export function diffTitle(changeset: ChangesetJson, file: FileChangeJson): string {
  const name = file.path.split('/').pop() ?? file.path;
  const what = file.op === 'modify' ? '' : ` (${file.op})`;
  return `${name}${what}: current ↔ proposed — ${changeset.title}`;
}

/** What an accept answer means to the user, in one line. */
export function acceptSummary(result: {
  written: string[];
  editorOnly: string[];
  commitId: string | null;
  notes: string[];
  changeset: ChangesetJson;
}): string {
  const parts = [`Accepted "${result.changeset.title}"`];
  if (result.commitId) {
    parts.push(`committed ${result.commitId.slice(0, 8)}`);
  }
  if (result.editorOnly.length) {
    parts.push(`unsaved in the editor: ${result.editorOnly.join(', ')} (save to keep)`);
  }
  parts.push(...result.notes);
  return parts.join(' — ');
}
