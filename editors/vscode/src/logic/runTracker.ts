/**
 * Follows workflow runs through `agentic/event` notifications.
 *
 * `agentic.runWorkflow` answers with the run id at once, and the run's first events can reach
 * the client before that answer, so events are kept per run id from the moment they arrive and
 * replayed to whoever starts watching the run later. Only the most recent runs are kept.
 */

import type { AgenticEvent, NodeState, ReviewQuestion, RunMessage, RunStatusJson } from './protocol';

/** Model calls and the provider's token counts (0 when the provider reported none). */
export interface TokenUsage {
  calls: number;
  promptTokens: number;
  completionTokens: number;
}

/** `waiting_input`: held at a review gate; `interrupted`: the server stopped while it worked
 * (it can be resumed). */
export type RunStatus = 'running' | 'waiting_input' | 'interrupted' | 'succeeded' | 'failed' | 'aborted' | 'cancelled';

/** Statuses a run does not leave by itself (`waiting_input` waits for an answer instead). */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['interrupted', 'succeeded', 'failed', 'aborted', 'cancelled']);

export interface RunState {
  runId: string;
  root: string | null;
  task: string;
  workflow: string | null;
  status: RunStatus;
  /** The stage running now (null between stages and after the run). */
  currentStage: string | null;
  /** Stages finished so far, in order, with their verdict and that attempt's model usage. */
  finished: { stage: string; ok: boolean; summary: string; usage: TokenUsage }[];
  /** The run's model usage so far (`model_call` totals; the final count from `run_finished`). */
  usage: TokenUsage;
  /** The running stage's model usage so far (from its `model_call`s; reset when a stage starts). */
  currentUsage: TokenUsage;
  changesetId: string | null;
  error: string;
  mermaid: string | null;
  scripted: boolean;
  provider: string;
  answer: string;
  /** Each stage node's latest state (`node_state` events, or a run status's `stages`). */
  nodeStates: Record<string, NodeState | string>;
  /** The review question while the run waits at a gate. */
  pending: ReviewQuestion | null;
  messages: RunMessage[];
  events: AgenticEvent[];
}

export type RunListener = (state: RunState, event: AgenticEvent) => void;

const RUN_KINDS = new Set([
  'run_started',
  'orchestrator_decision',
  'plan',
  'stage_started',
  'stage_finished',
  'model_call',
  'routing',
  'retrieval',
  'changeset_ready',
  'run_finished',
  'log',
  'node_state',
  'review_requested',
  'run_waiting',
  'review_answered',
  'message',
  'run_resumed',
]);

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

export function noUsage(): TokenUsage {
  return { calls: 0, promptTokens: 0, completionTokens: 0 };
}

function count(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

/** A wire `usage` / `total` object as {@link TokenUsage} (null when the event carries none). */
export function usageOf(value: unknown): TokenUsage | null {
  if (!value || typeof value !== 'object') {
    return null;
  }
  const u = value as Record<string, unknown>;
  return { calls: count(u.calls), promptTokens: count(u.promptTokens), completionTokens: count(u.completionTokens) };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    calls: a.calls + b.calls,
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
}

/** 512 → "512", 4210 → "4.2k", 12_345 → "12k", 1_500_000 → "1.5M". */
export function formatTokens(n: number): string {
  const short = (value: number, unit: string) => `${value < 10 ? (Math.round(value * 10) / 10).toString() : Math.round(value)}${unit}`;
  if (n >= 999_500) {
    return short(n / 1_000_000, 'M');
  }
  if (n >= 1000) {
    return short(n / 1000, 'k');
  }
  return String(n);
}

/** "3 calls · 4.2k prompt + 512 completion tokens" ("no model calls" when there were none). */
export function usageText(usage: TokenUsage): string {
  if (!usage.calls) {
    return 'no model calls';
  }
  const calls = `${usage.calls} call${usage.calls === 1 ? '' : 's'}`;
  return `${calls} · ${formatTokens(usage.promptTokens)} prompt + ${formatTokens(usage.completionTokens)} completion tokens`;
}

/** Short, for the graph's nodes: "2 calls · 1.2k + 300 tok". */
export function usageShort(usage: TokenUsage): string {
  const calls = `${usage.calls} call${usage.calls === 1 ? '' : 's'}`;
  return `${calls} · ${formatTokens(usage.promptTokens)} + ${formatTokens(usage.completionTokens)} tok`;
}

/** Each stage's model usage over all its attempts, the running stage's calls so far included. */
export function stageUsage(state: RunState): Map<string, TokenUsage> {
  const byStage = new Map<string, TokenUsage>();
  for (const f of state.finished) {
    byStage.set(f.stage, addUsage(byStage.get(f.stage) ?? noUsage(), f.usage));
  }
  if (state.currentStage && state.currentUsage.calls) {
    byStage.set(state.currentStage, addUsage(byStage.get(state.currentStage) ?? noUsage(), state.currentUsage));
  }
  return byStage;
}

export function newRun(runId: string, root: string | null = null): RunState {
  return {
    runId,
    root,
    task: '',
    workflow: null,
    status: 'running',
    currentStage: null,
    finished: [],
    usage: noUsage(),
    currentUsage: noUsage(),
    changesetId: null,
    error: '',
    mermaid: null,
    scripted: false,
    provider: '',
    answer: '',
    nodeStates: {},
    pending: null,
    messages: [],
    events: [],
  };
}

function question(value: unknown): ReviewQuestion | null {
  if (!value || typeof value !== 'object') {
    return null;
  }
  const q = value as Record<string, unknown>;
  return {
    stage: str(q.stage),
    name: str(q.name),
    question: str(q.question),
    summary: str(q.summary),
    files: Array.isArray(q.files) ? q.files.map(str) : [],
    diff: str(q.diff),
    revisions: count(q.revisions),
    maxRevisions: count(q.maxRevisions),
    ...(Array.isArray(q.artefacts) && q.artefacts.length ? { artefacts: q.artefacts.map(str) } : {}),
  };
}

/** Fold one event into the run's state (pure apart from mutating `state`). */
export function applyEvent(state: RunState, event: AgenticEvent): void {
  const d = event.data ?? {};
  state.events.push(event);
  state.root = state.root ?? event.root;
  switch (event.kind) {
    case 'run_started':
      state.task = str(d.task) || state.task;
      state.workflow = d.workflow ? str(d.workflow) : state.workflow;
      state.provider = str(d.provider);
      state.scripted = Boolean(d.scripted);
      break;
    case 'orchestrator_decision':
      state.workflow = str(d.workflow) || state.workflow;
      break;
    case 'plan':
      if (typeof d.mermaid === 'string') {
        state.mermaid = d.mermaid;
      }
      break;
    case 'stage_started':
      state.currentStage = str(d.stage);
      state.currentUsage = noUsage();
      break;
    case 'model_call': {
      const total = usageOf(d.total);
      const call = { calls: 1, promptTokens: count(d.promptTokens), completionTokens: count(d.completionTokens) };
      state.usage = total ?? addUsage(state.usage, call);
      if (state.currentStage !== null && str(d.stage) === state.currentStage) {
        state.currentUsage = addUsage(state.currentUsage, call);
      }
      break;
    }
    case 'stage_finished': {
      const stage = str(d.stage);
      const usage = usageOf(d.usage) ?? (state.currentStage === stage ? state.currentUsage : noUsage());
      state.finished.push({ stage, ok: Boolean(d.ok), summary: str(d.summary), usage });
      if (state.currentStage === stage) {
        state.currentStage = null;
        state.currentUsage = noUsage();
      }
      break;
    }
    case 'changeset_ready':
      state.changesetId = str(d.changesetId) || state.changesetId;
      break;
    case 'node_state':
      if (str(d.stage)) {
        state.nodeStates[str(d.stage)] = str(d.state);
      }
      break;
    case 'review_requested':
      state.pending = question(d);
      break;
    case 'run_waiting':
      state.status = 'waiting_input';
      state.currentStage = null;
      state.pending = question(d.question) ?? state.pending;
      break;
    case 'review_answered':
      state.pending = null;
      break;
    case 'run_resumed':
      state.status = 'running';
      state.pending = null;
      state.error = '';
      break;
    case 'message': {
      const message = d as unknown as RunMessage;
      const at = state.messages.findIndex((m) => m.id === message.id);
      if (at >= 0) {
        state.messages[at] = message;
      } else {
        state.messages.push(message);
      }
      break;
    }
    case 'run_finished':
      state.status = (str(d.status) as RunStatus) || 'failed';
      state.currentStage = null;
      state.pending = null;
      state.changesetId = d.changesetId ? str(d.changesetId) : state.changesetId;
      state.error = str(d.error);
      state.answer = str(d.answer) || state.answer;
      state.usage = usageOf(d.usage) ?? state.usage;
      break;
    default:
      break;
  }
}

/** A one-line description of the event for a progress notification (empty: nothing to say). */
export function progressMessage(event: AgenticEvent): string {
  const d = event.data ?? {};
  switch (event.kind) {
    case 'run_started':
      return d.scripted ? `started (${str(d.provider)})` : 'started';
    case 'orchestrator_decision':
      return `workflow ${str(d.workflow)}`;
    case 'stage_started': {
      const of = d.maxAttempts ? ` of ${str(d.maxAttempts)}` : '';
      return `${str(d.stage)} (attempt ${str(d.attempt ?? 1)}${of})`;
    }
    case 'stage_finished': {
      const usage = usageOf(d.usage);
      return `${str(d.stage)}: ${d.ok ? 'ok' : 'failed'}${usage ? ` (${usageText(usage)})` : ''}`;
    }
    case 'model_call': {
      const none = str(d.counted) === 'none' ? ', not counted by the provider' : '';
      const took = typeof d.seconds === 'number' ? `, ${d.seconds.toFixed(1)}s` : '';
      return (
        `${str(d.stage)} · ${str(d.role)}: ${formatTokens(count(d.promptTokens))} prompt + ` +
        `${formatTokens(count(d.completionTokens))} completion tokens${took}${none}`
      );
    }
    case 'routing':
      return `${str(d.stage)} → ${str(d.to)} (${str(d.reason)})`;
    case 'changeset_ready':
      return `changeset ${str(d.changesetId)} ready for review`;
    case 'node_state':
      return d.state === 'PRUNED' ? `${str(d.stage)} pruned${d.reason ? ` (${str(d.reason)})` : ''}` : '';
    case 'review_requested':
      return `${str(d.stage)} waits for your review`;
    case 'review_answered':
      return `${str(d.stage)}: ${d.decision === 'revise' ? 'revise' : 'approved'} (${str(d.by) || 'person'})${d.feedback ? `: ${str(d.feedback)}` : ''}`;
    case 'run_resumed':
      return d.resumedFrom === 'interrupted' ? 'resumed after an interruption' : 'resumed after the review';
    case 'message':
      return d.status === 'delivered' ? `message ${str(d.id)} delivered to ${str(d.stage)} · ${str(d.role)}` : `message ${str(d.id)} queued`;
    case 'run_finished': {
      const usage = usageOf(d.usage);
      return `run ${str(d.status)}${d.error ? `: ${str(d.error)}` : ''}${usage ? ` · ${usageText(usage)}` : ''}`;
    }
    default:
      return '';
  }
}

/**
 * The run's progress notification text after `event` (the state already folded it): what
 * happened, with the run's tokens so far — "fix · 3 calls · 4.2k prompt + 512 completion tokens".
 * Empty: nothing new to say.
 */
export function progressStatus(state: RunState, event: AgenticEvent): string {
  if (event.kind === 'model_call') {
    const stage = str(event.data?.stage) || state.currentStage || 'run';
    return `${stage} · ${usageText(state.usage)}`;
  }
  const message = progressMessage(event);
  if (!message || event.kind === 'run_finished' || !state.usage.calls) {
    return message;
  }
  return `${message} · ${usageText(state.usage)}`;
}

/** The run's outcome in one line, model usage included (for the run log and the final message). */
export function runSummary(state: RunState): string {
  const what =
    state.status === 'running'
      ? `running${state.currentStage ? ` ${state.currentStage}` : ''}`
      : state.status === 'waiting_input'
        ? `waiting for your review${state.pending ? ` of ${state.pending.stage}` : ''}`
        : state.status;
  const error = state.error ? `: ${state.error}` : '';
  const changeset = state.changesetId ? `, changeset ${state.changesetId}` : '';
  return `run ${what}${error}${changeset} · ${usageText(state.usage)}`;
}

/** The run ended (it may still be resumed when `interrupted`). */
export function isFinished(state: RunState): boolean {
  return TERMINAL_STATUSES.has(state.status);
}

/** The run is not working now: it ended, or it waits for an answer at a review gate. */
export function isSettled(state: RunState): boolean {
  return state.status !== 'running';
}

/** Fold a run status the server returned (`agentic.runStatus`, `listRuns`) into the run's
 * state. The events this window saw are newer than any answer: a run known from its events keeps
 * what they said, and only takes what they did not (its task, states of stages not seen yet). A
 * run this window saw no event of (one of an earlier server process, or of before a reload)
 * takes the status whole. */
export function applyStatus(state: RunState, status: RunStatusJson): void {
  state.task = state.task || status.task;
  state.workflow = state.workflow ?? status.workflow;
  state.changesetId = state.changesetId ?? status.changesetId;
  state.nodeStates = { ...status.stages, ...state.nodeStates };
  if (state.events.length) {
    return;
  }
  state.status = (status.status as RunStatus) || state.status;
  state.currentStage = status.status === 'running' && status.stage ? status.stage : null;
  state.error = status.error;
  state.pending = status.pending;
  state.messages = [...status.messages];
  state.nodeStates = { ...status.stages };
  state.usage = { ...status.usage };
}

export class RunTracker {
  private readonly runs = new Map<string, RunState>();
  private readonly listeners = new Map<string, Set<RunListener>>();
  private readonly anyListeners = new Set<RunListener>();
  lastRunId: string | null = null;

  constructor(private readonly keep = 50) {}

  /** Feed every `agentic/event`; returns true when it belonged to a run. */
  handle(event: AgenticEvent): boolean {
    if (!event.runId || !RUN_KINDS.has(event.kind)) {
      return false;
    }
    const state = this.ensure(event.runId, event.root);
    applyEvent(state, event);
    for (const listener of [...(this.listeners.get(event.runId) ?? [])]) {
      listener(state, event);
    }
    for (const listener of [...this.anyListeners]) {
      listener(state, event);
    }
    return true;
  }

  /** Register a run the client started (its task is known before any event says it). */
  started(runId: string, task: string, workflow: string | null, root: string | null): RunState {
    const state = this.ensure(runId, root);
    state.task = state.task || task;
    state.workflow = state.workflow ?? workflow;
    this.lastRunId = runId;
    return state;
  }

  get(runId: string): RunState | undefined {
    return this.runs.get(runId);
  }

  all(): RunState[] {
    return [...this.runs.values()].reverse();
  }

  /** Call `listener` for the events seen so far (replayed from index `since`) and every later
   * one of the run. */
  watch(runId: string, listener: RunListener, since = 0): () => void {
    const state = this.ensure(runId, null);
    for (const event of state.events.slice(since)) {
      listener(state, event);
    }
    const set = this.listeners.get(runId) ?? new Set<RunListener>();
    set.add(listener);
    this.listeners.set(runId, set);
    return () => set.delete(listener);
  }

  onAny(listener: RunListener): () => void {
    this.anyListeners.add(listener);
    return () => this.anyListeners.delete(listener);
  }

  /** Resolves with the run's final state once `run_finished` arrived (or at once if it has). */
  finished(runId: string): Promise<RunState> {
    return this.until(runId, isFinished);
  }

  /** Resolves once the run stops working: it finished, or it waits at a review gate. */
  settled(runId: string): Promise<RunState> {
    return this.until(runId, isSettled);
  }

  private until(runId: string, done: (state: RunState) => boolean): Promise<RunState> {
    return new Promise((resolve) => {
      const state = this.ensure(runId, null);
      if (done(state)) {
        resolve(state);
        return;
      }
      const stop = this.watch(
        runId,
        (now) => {
          if (done(now)) {
            queueMicrotask(() => stop());
            resolve(now);
          }
        },
        state.events.length,
      );
    });
  }

  /** After an answer to its review (`agentic.respond`) or a resume the run works again, unless
   * the events since index `since` already said it waits or ended again. */
  resumed(runId: string, since: number): RunState {
    const state = this.ensure(runId, null);
    const again = state.events.slice(since).some((e) => e.kind === 'run_waiting' || e.kind === 'run_finished');
    if (!again) {
      state.status = 'running';
      state.pending = null;
      state.error = '';
    }
    return state;
  }

  /** Fold a run status the server returned into the run's state (see {@link applyStatus}). */
  update(status: RunStatusJson, root: string | null = null): RunState {
    const state = this.ensure(status.runId, root);
    applyStatus(state, status);
    for (const listener of [...this.anyListeners]) {
      listener(state, { kind: 'status', root: state.root, runId: state.runId, data: {}, ts: Date.now() / 1000 });
    }
    return state;
  }

  private ensure(runId: string, root: string | null): RunState {
    let state = this.runs.get(runId);
    if (!state) {
      state = newRun(runId, root);
      this.runs.set(runId, state);
      this.lastRunId = this.lastRunId ?? runId;
      while (this.runs.size > this.keep) {
        const oldest = this.runs.keys().next().value as string;
        this.runs.delete(oldest);
        this.listeners.delete(oldest);
      }
    }
    return state;
  }
}
