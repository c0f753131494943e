/**
 * Follows workflow runs through `agentic/event` notifications.
 *
 * `agentic.runWorkflow` answers with the run id at once, and the run's first events can reach
 * the client before that answer, so events are kept per run id from the moment they arrive and
 * replayed to whoever starts watching the run later. Only the most recent runs are kept.
 */

import type { AgenticEvent } from './protocol';

/** Model calls and the provider's token counts (0 when the provider reported none). */
export interface TokenUsage {
  calls: number;
  promptTokens: number;
  completionTokens: number;
}

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'aborted' | 'cancelled';

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
    events: [],
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
    case 'run_finished':
      state.status = (str(d.status) as RunStatus) || 'failed';
      state.currentStage = null;
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
  const what = state.status === 'running' ? `running${state.currentStage ? ` ${state.currentStage}` : ''}` : state.status;
  const error = state.error ? `: ${state.error}` : '';
  const changeset = state.changesetId ? `, changeset ${state.changesetId}` : '';
  return `run ${what}${error}${changeset} · ${usageText(state.usage)}`;
}

export function isFinished(state: RunState): boolean {
  return state.status !== 'running';
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

  /** Call `listener` for the events seen so far (replayed) and every later one of the run. */
  watch(runId: string, listener: RunListener): () => void {
    const state = this.ensure(runId, null);
    for (const event of [...state.events]) {
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
    return new Promise((resolve) => {
      const stop = this.watch(runId, (state) => {
        if (isFinished(state)) {
          queueMicrotask(() => stop());
          resolve(state);
        }
      });
    });
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
