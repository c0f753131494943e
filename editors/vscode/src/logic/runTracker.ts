/**
 * Follows workflow runs through `agentic/event` notifications.
 *
 * `agentic.runWorkflow` answers with the run id at once, and the run's first events can reach
 * the client before that answer, so events are kept per run id from the moment they arrive and
 * replayed to whoever starts watching the run later. Only the most recent runs are kept.
 */

import type { AgenticEvent } from './protocol';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'aborted' | 'cancelled';

export interface RunState {
  runId: string;
  root: string | null;
  task: string;
  workflow: string | null;
  status: RunStatus;
  /** The stage running now (null between stages and after the run). */
  currentStage: string | null;
  /** Stages finished so far, in order, with their verdict. */
  finished: { stage: string; ok: boolean; summary: string }[];
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
  'routing',
  'retrieval',
  'changeset_ready',
  'run_finished',
  'log',
]);

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
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
      break;
    case 'stage_finished':
      state.finished.push({ stage: str(d.stage), ok: Boolean(d.ok), summary: str(d.summary) });
      if (state.currentStage === str(d.stage)) {
        state.currentStage = null;
      }
      break;
    case 'changeset_ready':
      state.changesetId = str(d.changesetId) || state.changesetId;
      break;
    case 'run_finished':
      state.status = (str(d.status) as RunStatus) || 'failed';
      state.currentStage = null;
      state.changesetId = d.changesetId ? str(d.changesetId) : state.changesetId;
      state.error = str(d.error);
      state.answer = str(d.answer) || state.answer;
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
    case 'stage_finished':
      return `${str(d.stage)}: ${d.ok ? 'ok' : 'failed'}`;
    case 'routing':
      return `${str(d.stage)} → ${str(d.to)} (${str(d.reason)})`;
    case 'changeset_ready':
      return `changeset ${str(d.changesetId)} ready for review`;
    case 'run_finished':
      return `run ${str(d.status)}${d.error ? `: ${str(d.error)}` : ''}`;
    default:
      return '';
  }
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
