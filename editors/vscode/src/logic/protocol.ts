/**
 * The agentic-lsp server's contract as the extension uses it: `workspace/executeCommand`
 * command names, their argument and result shapes, and the `agentic/event` notification
 * (the server's wire models: `src/agentic_lsp/lsp/wire.py`, `wire_changesets.py`
 * and `wire_events.py`; docs/lsp.md).
 * Every key is camelCase. Plain data only, so the logic built on it runs under node without
 * VS Code.
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
  listRuns: 'agentic.listRuns',
  runStatus: 'agentic.runStatus',
  respond: 'agentic.respond',
  sendMessage: 'agentic.sendMessage',
  prune: 'agentic.prune',
  resumeRun: 'agentic.resumeRun',
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
  startLine: number;
  endLine: number;
  score: number;
  kind: string;
  symbol: string | null;
  signature: string;
  language: string | null;
  /** The index scope (`index.scopes`) holding the path, in a workspace indexed by scope. */
  scope?: string | null;
  /** Signal name (camelCase, e.g. `dense`, `lexicalAll`) → 1-based rank. */
  signals: Record<string, number>;
}

export interface SearchResult {
  query: string;
  results: SearchHit[];
  notes: string[];
  filesConsidered: string[];
  functionsEmbedded: number;
}

export interface IndexProgress {
  phase: string;
  done: number;
  total: number;
  percent: number;
  rate: number;
  etaS: number | null;
  message: string;
}

/** One index sync: `agentic.reindex` (wait) and the `index_done` / `index_updated` events. */
export interface IndexSummary {
  files: number;
  symbols: number;
  sections: number;
  parsed: number;
  unchanged: number;
  rechecked: number;
  removed: number;
  embedded: number;
  embedReused: number;
  redactions: number;
  parseErrors: number;
  /** Files left out, by reason (e.g. `too-large`, `secret`). */
  skipped: { reason: string; files: number }[];
  /** Phase (camelCase, e.g. `parse`, `modelLoad`) → seconds. */
  timings: Record<string, number>;
  cancelled: boolean;
  notes: string[];
}

export interface IndexStatus {
  state: string;
  files: number;
  symbols: number;
  densePending: number;
  store: string;
  root: string;
  message: string;
  progress: IndexProgress | null;
  lastSummary: IndexSummary | null;
}

export interface IndexStatusResult {
  roots: IndexStatus[];
}

/** `agentic.reindex`: the summary (wait), `{started, root}` (no wait) or `{failed}`. */
export type ReindexResult = IndexSummary | { started: true; root: string } | { failed: string };

export interface WorkflowStage {
  id: string;
  name: string;
  type: string;
  required: boolean;
}

export interface WorkflowInfo {
  name: string;
  description: string;
  workflowType: string;
  stages: WorkflowStage[];
}

export interface ListWorkflowsResult {
  workflows: WorkflowInfo[];
}

export interface WorkflowGraphResult {
  mermaid: string;
}

/** An LSP `Diagnostic` as `context.diagnostics` carries it (`severity`: 1 error … 4 hint). */
export interface DiagnosticJson {
  range: Range;
  message: string;
  severity?: 1 | 2 | 3 | 4;
  source?: string;
  code?: string | number;
}

/** `context` of `agentic.runWorkflow`: where the user is. The server reads the code itself. */
export interface EditorContextArg {
  uri: string;
  selection?: Range;
  cursor?: Position;
  diagnostics?: DiagnosticJson[];
}

/** `agentic.runWorkflow`'s argument. */
export interface RunWorkflowArgs {
  task: string;
  workflow?: string;
  root?: string;
  context?: EditorContextArg;
}

/** `agentic.runWorkflow` and `agentic.refine`. */
export interface RunStarted {
  runId: string;
}

export interface CancelRunResult {
  cancelled: boolean;
}

/** A stage node's state (`node_state` events, a run status's `stages`). */
export type NodeState = 'READY' | 'RUNNING' | 'WAITING_INPUT' | 'COMPLETED' | 'FAILED' | 'PRUNED' | 'SKIPPED';

export const NODE_STATES: readonly NodeState[] = ['READY', 'RUNNING', 'WAITING_INPUT', 'COMPLETED', 'FAILED', 'PRUNED', 'SKIPPED'];

/** The question of a review gate (`review_requested`, `run_waiting.question`, `pending`). */
export interface ReviewQuestion {
  stage: string;
  name: string;
  question: string;
  summary: string;
  files: string[];
  diff: string;
  revisions: number;
  maxRevisions: number;
  /** Absolute paths of the run's artefact files at a plan gate (`plan.md`, `tickets.md`): the
   * person may edit them before approving, and the run goes on with the edited files. */
  artefacts?: string[];
}

/** A message to a run (`agentic.sendMessage`, the `message` event, a run status's `messages`). */
export interface RunMessage {
  id: number;
  text: string;
  sent: number;
  status: 'queued' | 'delivered' | string;
  delivered: number | null;
  stage: string;
  role: string;
}

export type RunStatusName =
  | 'running'
  | 'waiting_input'
  | 'interrupted'
  | 'succeeded'
  | 'failed'
  | 'aborted'
  | 'cancelled';

/** `agentic.runStatus`, each run of `agentic.listRuns`, and the answer of the steering commands. */
export interface RunStatusJson {
  runId: string;
  task: string;
  workflow: string | null;
  status: RunStatusName | string;
  /** The stage running or waiting ('' when none). */
  stage: string;
  attempt: number;
  /** Percent of the planned stages completed or pruned. */
  progress: number;
  usage: { calls: number; promptTokens: number; completionTokens: number };
  pending: ReviewQuestion | null;
  stages: Record<string, NodeState | string>;
  changesetId: string | null;
  error: string;
  started: number;
  finished: number | null;
  messages: RunMessage[];
  resumable: boolean;
}

export interface ListRunsResult {
  runs: RunStatusJson[];
}

export type ReviewDecision = 'approve' | 'revise';

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
  author: { stage: string; agent: string; iteration: number };
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
  /** Files with flags (e.g. a secret-looking value). */
  flagged: { path: string; flags: string[] }[];
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

export interface ListChangesetsResult {
  changesets: ChangesetJson[];
}

export interface RefreshResult {
  /** Files rebuilt on the current text. */
  refreshed: string[];
  conflicts: { path: string; reason: string; hunks: number[] }[];
  changeset: ChangesetJson;
}

export interface RollbackResult {
  acceptId: string;
  changesetId: string;
  revertCommitId: string | null;
  files: string[];
  root: string;
}

/** `data` of the `agentic/event` kinds the extension reads (see docs/lsp.md for all). */
export interface IndexStateEventData {
  state: string;
  phase: string;
  files: number;
  symbols: number;
  message: string;
}

export interface ChangesetChangedEventData {
  changesetId: string;
  status: string;
}

export interface StageStartedEventData {
  stage: string;
  name: string;
  attempt: number;
  iteration: number;
  maxAttempts: number;
}

export interface StageFinishedEventData {
  stage: string;
  attempt: number;
  ok: boolean;
  summary: string;
  agents: { name: string; ok: boolean; summary: string }[];
  edited: string[];
}

export interface RoutingEventData {
  /** The stage the route leaves. */
  stage: string;
  to: string;
  reason: string;
  detail: string;
}

export interface ChangesetReadyEventData {
  changesetId: string;
  files: string[];
  diffStats: { path: string; added: number; removed: number }[];
  flagged: { path: string; flags: string[] }[];
  authors: { path: string; stage: string; agent: string; iteration: number }[];
}

export interface RunFinishedEventData {
  status: string;
  changesetId: string | null;
  error: string;
  provider: string;
  scripted: boolean;
  summary: string;
  answer: string;
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
