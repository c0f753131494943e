/**
 * The *Runs* view's model: each run of `agentic.listRuns` (status icon, workflow, task, progress,
 * current stage), its stages with their node states, what can be done with it (approve, revise,
 * message, prune, resume, cancel), and the texts of a review gate's notification and diff
 * document.
 */

import type { NodeState, ReviewQuestion, RunStatusJson } from './protocol';
import { usageText } from './runTracker';

/** Run events after which the list is read again. */
export const RUN_LIST_EVENTS: ReadonlySet<string> = new Set([
  'run_started',
  'orchestrator_decision',
  'node_state',
  'stage_started',
  'stage_finished',
  'review_requested',
  'run_waiting',
  'review_answered',
  'run_resumed',
  'message',
  'changeset_ready',
  'run_finished',
]);

export type RunAction = 'approve' | 'revise' | 'message' | 'prune' | 'resume' | 'cancel' | 'graph';

/** What the user can do with a run in its status (the server refuses the rest). */
export function runActions(run: Pick<RunStatusJson, 'status' | 'resumable' | 'stages'>): Set<RunAction> {
  const actions = new Set<RunAction>(['graph']);
  switch (run.status) {
    case 'running':
      actions.add('message').add('cancel');
      break;
    case 'waiting_input':
      actions.add('approve').add('revise').add('message').add('cancel');
      break;
    case 'interrupted':
      actions.add('cancel');
      if (run.resumable) {
        actions.add('resume');
      }
      break;
    default:
      break;
  }
  if ((run.status === 'running' || run.status === 'waiting_input') && prunableStages(run).length) {
    actions.add('prune');
  }
  return actions;
}

/** Stages that can be pruned: ready or running (the server also refuses required ones). */
export function prunableStages(run: Pick<RunStatusJson, 'stages'>): string[] {
  return Object.entries(run.stages)
    .filter(([, state]) => state === 'READY' || state === 'RUNNING')
    .map(([id]) => id);
}

export interface ItemView {
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id. */
  icon: string;
  /** A theme colour id for the icon (none: the default). */
  color?: string;
  contextValue: string;
}

const STATUS_ICONS: Record<string, { icon: string; color?: string; word: string }> = {
  running: { icon: 'sync~spin', color: 'charts.blue', word: 'running' },
  waiting_input: { icon: 'bell-dot', color: 'charts.orange', word: 'waits for your review' },
  interrupted: { icon: 'debug-pause', color: 'charts.yellow', word: 'interrupted' },
  succeeded: { icon: 'pass', color: 'testing.iconPassed', word: 'succeeded' },
  failed: { icon: 'error', color: 'testing.iconFailed', word: 'failed' },
  aborted: { icon: 'circle-slash', color: 'testing.iconFailed', word: 'aborted' },
  cancelled: { icon: 'circle-large-outline', word: 'cancelled' },
};

const STATE_ICONS: Record<string, { icon: string; color?: string; word: string }> = {
  READY: { icon: 'circle-large-outline', color: 'disabledForeground', word: 'ready' },
  RUNNING: { icon: 'sync~spin', color: 'charts.blue', word: 'running' },
  WAITING_INPUT: { icon: 'bell-dot', color: 'charts.orange', word: 'waits for your review' },
  COMPLETED: { icon: 'pass', color: 'testing.iconPassed', word: 'completed' },
  FAILED: { icon: 'error', color: 'testing.iconFailed', word: 'failed' },
  PRUNED: { icon: 'circle-slash', color: 'disabledForeground', word: 'pruned' },
  SKIPPED: { icon: 'debug-step-over', color: 'disabledForeground', word: 'skipped (not planned)' },
};

function firstLine(text: string, max: number): string {
  const line = (text.split('\n').find((l) => l.trim()) ?? '').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function when(seconds: number | null): string {
  if (!seconds) {
    return '';
  }
  const d = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** What the run does now, shortly: "waits at review_change", "fix (attempt 2)", "succeeded". */
export function runNow(run: RunStatusJson): string {
  const style = STATUS_ICONS[run.status];
  if (run.status === 'waiting_input') {
    return `waits at ${run.pending?.stage || run.stage || 'a review gate'}`;
  }
  if (run.status === 'running') {
    return run.stage ? `${run.stage}${run.attempt > 1 ? ` (attempt ${run.attempt})` : ''}` : 'starting';
  }
  return style?.word ?? run.status;
}

/** A run's row: `$(icon) task` and "workflow · 40% · now". */
export function runView(run: RunStatusJson): ItemView {
  const style = STATUS_ICONS[run.status] ?? { icon: 'question', word: run.status };
  const flags = [
    run.resumable ? 'resumable' : '',
    run.changesetId ? 'changeset' : '',
    run.status === 'running' || run.status === 'waiting_input' ? (prunableStages(run).length ? 'prunable' : '') : '',
  ].filter(Boolean);
  const tooltip = [
    `${run.task || run.runId}`,
    `run ${run.runId} · ${run.workflow ?? 'workflow not chosen yet'}`,
    `${style.word}${run.stage && run.status !== 'waiting_input' && run.status !== 'running' ? ` (last stage ${run.stage})` : ''} · ${run.progress}% of the planned stages done`,
    run.pending ? `waits for your review of ${run.pending.name || run.pending.stage}: ${firstLine(run.pending.question, 200)}` : '',
    run.error ? `error: ${firstLine(run.error, 300)}` : '',
    run.changesetId ? `changeset ${run.changesetId}` : '',
    run.messages.length ? `${run.messages.length} message(s), ${run.messages.filter((m) => m.status === 'queued').length} queued` : '',
    usageText(run.usage),
    run.started ? `started ${when(run.started)}${run.finished ? `, finished ${when(run.finished)}` : ''}` : '',
  ].filter(Boolean);
  return {
    label: firstLine(run.task, 80) || run.runId,
    description: `${run.workflow ?? 'auto'} · ${Math.max(0, Math.min(100, Math.round(run.progress)))}% · ${runNow(run)}`,
    tooltip: tooltip.join('\n'),
    icon: style.icon,
    color: style.color,
    contextValue: ['run', run.status, ...flags].join(':'),
  };
}

export interface StageRow {
  runId: string;
  stage: string;
  state: NodeState | string;
}

/** A run's stages in the order the server lists them, each with its state. */
export function stageRows(run: RunStatusJson): StageRow[] {
  return Object.entries(run.stages).map(([stage, state]) => ({ runId: run.runId, stage, state }));
}

/** A stage's row under its run: `$(icon) stage` and its state in words. */
export function stageView(row: StageRow, run?: RunStatusJson): ItemView {
  const style = STATE_ICONS[row.state] ?? { icon: 'circle-small', word: row.state.toLowerCase() };
  const live = run && (run.status === 'running' || run.status === 'waiting_input');
  const prunable = live && (row.state === 'READY' || row.state === 'RUNNING');
  const attempt = run && run.stage === row.stage && run.attempt > 1 ? ` (attempt ${run.attempt})` : '';
  return {
    label: row.stage,
    description: `${style.word}${attempt}`,
    tooltip: `${row.stage}: ${row.state}${prunable ? ' (can be pruned, unless the workflow requires it)' : ''}`,
    icon: style.icon,
    color: style.color,
    contextValue: `stage:${row.state}${prunable ? ':prunable' : ''}`,
  };
}

/** The notification of a review gate: "Run "task" waits for your review of stage Name". */
export function waitingNotice(run: { runId: string; task: string }, question: ReviewQuestion): string {
  const task = firstLine(run.task, 60);
  const who = task ? `"${task}"` : run.runId;
  const stage = question.name && question.name !== question.stage ? `${question.name} (${question.stage})` : question.stage;
  const files = question.files.length ? ` · ${question.files.length} file(s) changed` : ' · no changes';
  const revisions = question.revisions ? ` · revision ${question.revisions} of at most ${question.maxRevisions}` : '';
  const names = planFiles(question).map(baseName);
  const plan = names.length ? ` Edit ${names.join(' and ')} before approving if you like: the run goes on with your version.` : '';
  return `Run ${who} waits for your review of stage ${stage}${files}${revisions}.${plan}`;
}

/** The run's artefact files a gate offers for editing (plan.md, tickets.md); none for other gates. */
export function planFiles(question: ReviewQuestion): string[] {
  return (question.artefacts ?? []).filter((p) => typeof p === 'string' && p.length > 0);
}

const PLAN_NAMES = new Set(['discovery.md', 'plan.md', 'tickets.md']);

/** The button that opens a gate's files: `Open Plan` for a plan gate, `Open File` for another
 * file to edit (a merge conflict handed to the user); none without files. */
export function openLabel(question: ReviewQuestion): string | undefined {
  const files = planFiles(question);
  if (!files.length) {
    return undefined;
  }
  return files.every((f) => PLAN_NAMES.has(baseName(f))) ? 'Open Plan' : 'Open File';
}

/** The buttons of a gate's notification: an open button only where the gate has files. */
export function gateButtons(question: ReviewQuestion): string[] {
  const open = openLabel(question);
  return ['Approve', 'Revise…', 'Show Diff', ...(open ? [open] : [])];
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/** One notification per gate reached: a revision asks again, a repeated event does not. */
export function questionKey(runId: string, question: ReviewQuestion): string {
  return `${runId}/${question.stage}/${question.revisions}`;
}

/** The text of the read-only document that shows a gate's question and its diff. */
export function questionDocument(run: { runId: string; task: string }, question: ReviewQuestion): string {
  const comment = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => `# ${l}`);
  const head = [
    `# Run ${run.runId}: ${firstLine(run.task, 200)}`,
    `# Review of stage ${question.name || question.stage} (${question.stage})`,
    ...comment(question.question),
    ...comment(question.summary),
    `# Files: ${question.files.join(', ') || 'none'}`,
    ...planFiles(question).map((p) => `# Plan file (edit it before approving): ${p}`),
    '#',
  ];
  return `${head.join('\n')}\n${question.diff || '# (the stage changed nothing)\n'}`;
}

/** The quick pick of stages to prune. */
export function pruneItems(run: RunStatusJson): { label: string; description: string; value: string }[] {
  return prunableStages(run).map((stage) => ({
    label: stage,
    description: run.stages[stage] === 'RUNNING' ? 'running now: cancelled, its edits discarded' : 'ready: skipped when reached',
    value: stage,
  }));
}
