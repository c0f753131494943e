/**
 * The agentic-lsp server's contract as the extension uses it: `workspace/executeCommand`
 * command names, their argument and result shapes, and the `agentic/event` notification
 * (see `src/agentic_lsp/lsp/commands.py`, `convert.py` and `progress.py` of the server).
 * Plain data only, so the logic built on it runs under node without VS Code.
 */

export const EVENT_METHOD = 'agentic/event';
export const DIAGNOSTIC_SOURCE = 'agentic';

export const ServerCommand = {
  search: 'agentic.search',
  indexStatus: 'agentic.indexStatus',
  reindex: 'agentic.reindex',
  listWorkflows: 'agentic.listWorkflows',
  workflowGraph: 'agentic.workflowGraph',
  runWorkflow: 'agentic.runWorkflow',
  cancelRun: 'agentic.cancelRun',
  refine: 'agentic.refine',
  listChangesets: 'agentic.listChangesets',
  showChangeset: 'agentic.showChangeset',
  acceptChangeset: 'agentic.acceptChangeset',
  rejectChangeset: 'agentic.rejectChangeset',
  refreshChangeset: 'agentic.refreshChangeset',
  rollback: 'agentic.rollback',
} as const;

export type ServerCommandName = (typeof ServerCommand)[keyof typeof ServerCommand];

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** One `agentic/event` notification: `{kind, root, runId?, data, ts}`. */
export interface AgenticEvent {
  kind: string;
  root: string | null;
  runId: string | null;
  data: Record<string, unknown>;
  ts: number;
}

export interface SearchHit {
  path: string;
  uri: string;
  range: Range;
  start_line: number;
  end_line: number;
  score: number;
  kind: string;
  symbol: string | null;
  signature: string;
  language: string | null;
  signals: Record<string, number>;
}

export interface SearchResult {
  query: string;
  results: SearchHit[];
  notes: string[];
  filesConsidered: string[];
}

export interface IndexProgress {
  phase: string;
  done: number;
  total: number;
  rate: number;
  eta_s: number | null;
  message: string;
}

export interface IndexStatus {
  state: string;
  files: number;
  symbols: number;
  dense_pending: number;
  store: string;
  root: string;
  message: string;
  progress: IndexProgress | null;
  last_summary: Record<string, unknown> | null;
}

export interface WorkflowStage {
  id: string;
  name: string;
  type: string;
  required: boolean;
}

export interface WorkflowInfo {
  name: string;
  description: string;
  workflow_type: string;
  stages: WorkflowStage[];
}

export interface HunkJson {
  index: number;
  status: string;
  header: string;
  originalStart: number;
  originalLen: number;
  proposedStart: number;
  proposedLen: number;
  originalText: string;
  proposedText: string;
  lines: string[];
  range: Range;
}

export interface FileChangeJson {
  path: string;
  uri: string;
  newPath: string | null;
  op: 'modify' | 'create' | 'delete' | 'rename';
  status: string;
  flags: string[];
  reason: string;
  author: { agent?: string | null; stage?: string | null };
  stale: boolean;
  pendingHunks: number[];
  original?: string | null;
  proposed?: string | null;
  diff?: string;
  hunks?: HunkJson[];
}

export interface ChangesetJson {
  id: string;
  runId: string;
  title: string;
  summary: string;
  status: string;
  iteration: number;
  created: string;
  notes: string[];
  /** Flagged files: path → flags (e.g. a secret-looking value). */
  flags: Record<string, string[]>;
  stale: string[];
  root: string;
  files: FileChangeJson[];
  diff?: string;
}

export interface AcceptResult {
  applied: boolean;
  via: 'editor' | 'disk';
  acceptId: string;
  commitId: string | null;
  written: string[];
  editorOnly: string[];
  notes: string[];
  changeset: ChangesetJson;
}

export interface RefreshResult {
  refreshed: boolean;
  conflicts: { path: string; reason: string; hunks: number[] }[];
  changeset: ChangesetJson;
}

export interface RollbackResult {
  acceptId: string;
  changesetId: string;
  revertCommitId: string | null;
  files: string[];
}

/** Arguments of accept/reject: a whole changeset, some files, or hunks of one file. */
export interface DecisionArgs {
  changesetId: string;
  root?: string;
  path?: string;
  paths?: string[];
  hunks?: number[];
}

/** `data` of a JSON-RPC error answered by the server for an engine error. */
export interface ServerErrorData {
  kind?: string;
  hint?: string;
}

export const LIVE_STATUSES = new Set(['pending', 'partially_accepted']);
