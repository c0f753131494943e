/** Steering runs: answer a review gate (approve, revise with feedback), send a run a message,
 * prune a stage, resume an interrupted run, cancel one; from the *Runs* view, the palette or the
 * notification a review gate raises. */

import * as vscode from 'vscode';
import type { AgenticClient } from './client';
import type { PickItem } from './logic/quickPicks';
import { gateButtons, openLabel, planFiles, pruneItems, questionKey, runActions, runNow, waitingNotice, type RunAction } from './logic/runList';
import {
  ServerCommand,
  type AgenticEvent,
  type ReviewDecision,
  type ReviewQuestion,
  type RunMessage,
  type RunStatusJson,
} from './logic/protocol';
import type { RunState, RunTracker } from './logic/runTracker';
import type { RunDocuments, RunNode, RunStore } from './runsView';

/** What a command names: a row of the view, or a run id (from a notification). */
export type RunTarget = RunNode | string | undefined;

interface Resolved {
  runId: string;
  root: string | undefined;
  run: RunStatusJson | undefined;
  stage?: string;
}

export interface RunFollower {
  /** Follow a run that goes on in a progress notification (events from index `since`). */
  follow(runId: string, title: string, since: number): Promise<RunState>;
  showRunGraph(runId: string, root?: string): Promise<void>;
}

const ACTION_TITLES: Record<RunAction, string> = {
  approve: 'Approve which run?',
  revise: 'Revise which run?',
  message: 'Send a message to which run?',
  prune: 'Prune a stage of which run?',
  resume: 'Resume which run?',
  cancel: 'Cancel which run?',
  graph: 'Show the graph of which run?',
};

export class RunSteering {
  private readonly asked = new Set<string>();

  constructor(
    private readonly client: AgenticClient,
    private readonly tracker: RunTracker,
    private readonly store: RunStore,
    private readonly docs: RunDocuments,
    private readonly follower: RunFollower,
  ) {}

  // -- which run -----------------------------------------------------------------------------------

  private async resolve(target: RunTarget, action: RunAction): Promise<Resolved | undefined> {
    if (typeof target === 'string') {
      const known = this.store.find(target);
      return { runId: target, root: known?.root ?? this.tracker.get(target)?.root ?? undefined, run: known?.run };
    }
    if (target) {
      return { runId: target.run.runId, root: target.root, run: target.run, stage: target.type === 'stage' ? target.row.stage : undefined };
    }
    await this.store.refresh();
    const candidates = this.store.runs.filter(({ run }) => runActions(run).has(action));
    if (!candidates.length) {
      void vscode.window.showInformationMessage(this.store.lastError || `No run to ${action === 'graph' ? 'show' : action} now.`);
      return undefined;
    }
    if (candidates.length === 1 && action !== 'graph') {
      const { run, root } = candidates[0];
      return { runId: run.runId, root, run };
    }
    const picked = await vscode.window.showQuickPick(
      candidates.map<PickItem<{ run: RunStatusJson; root: string }>>((c) => ({
        label: c.run.task.split('\n')[0] || c.run.runId,
        description: `${c.run.workflow ?? 'auto'} · ${c.run.progress}% · ${runNow(c.run)}`,
        detail: `run ${c.run.runId}`,
        value: c,
      })),
      { title: `Agentic: ${ACTION_TITLES[action]}`, matchOnDescription: true },
    );
    return picked ? { runId: picked.value.run.runId, root: picked.value.root, run: picked.value.run } : undefined;
  }

  private async status(found: Resolved): Promise<RunStatusJson> {
    const run = await this.client.command<RunStatusJson>(ServerCommand.runStatus, { runId: found.runId, root: found.root });
    if (found.root) {
      this.store.remember(run, found.root);
    }
    return run;
  }

  private title(runId: string, run?: { task: string }): string {
    const task = run?.task || this.tracker.get(runId)?.task || '';
    const line = task.split('\n')[0];
    return line ? `Agentic: ${line.length > 60 ? `${line.slice(0, 59)}…` : line}` : `Agentic: run ${runId}`;
  }

  // -- review gates --------------------------------------------------------------------------------

  /** A `review_requested` / `run_waiting` event: say so once per gate, with what can be done. */
  onEvent(event: AgenticEvent): void {
    if (!event.runId || (event.kind !== 'review_requested' && event.kind !== 'run_waiting')) {
      return;
    }
    const question = (event.kind === 'run_waiting' ? event.data.question : event.data) as ReviewQuestion | undefined;
    if (question?.stage) {
      this.notifyWaiting(event.runId, question, event.root ?? undefined);
    }
  }

  notifyWaiting(runId: string, question: ReviewQuestion, root?: string): void {
    const key = questionKey(runId, question);
    if (this.asked.has(key)) {
      return;
    }
    this.asked.add(key);
    this.store.refreshSoon();
    void this.ask(runId, question, root);
  }

  private stillAsking(runId: string, question: ReviewQuestion): boolean {
    const state = this.tracker.get(runId);
    return !state?.events.length || (state.status === 'waiting_input' && (!state.pending || questionKey(runId, state.pending) === questionKey(runId, question)));
  }

  private async ask(runId: string, question: ReviewQuestion, root?: string): Promise<void> {
    const run = { runId, task: this.tracker.get(runId)?.task ?? this.store.find(runId)?.run.task ?? '' };
    for (;;) {
      const choice = await vscode.window.showInformationMessage(waitingNotice(run, question), ...gateButtons(question));
      if (!choice) {
        return;
      }
      if (!this.stillAsking(runId, question)) {
        void vscode.window.showInformationMessage(`Run ${runId} no longer waits for this review.`);
        return;
      }
      const target: Resolved = { runId, root, run: undefined };
      if (choice === 'Approve') {
        await this.guarded('Approving', () => this.respondTo(target, 'approve', undefined, question));
        return;
      }
      if (choice === 'Revise…') {
        await this.guarded('Revising', () => this.reviseTarget(target, question));
        return;
      }
      if (choice === openLabel(question)) {
        await this.guarded('Opening the plan', () => this.openPlan(question));
      } else {
        await this.openQuestion(run, question);
      }
      // the notification closed with the click: ask again, next to the diff or the plan
    }
  }

  /** Save the plan files edited in editors but not saved yet: the run reads them from disk. */
  private async savePlan(question: ReviewQuestion | undefined): Promise<void> {
    const files = new Set(question ? planFiles(question).map((f) => vscode.Uri.file(f).toString()) : []);
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && files.has(doc.uri.toString())) {
        await doc.save();
      }
    }
  }

  /** A plan gate's artefact files (plan.md, tickets.md) in editors, to edit before approving:
   * the run reads them afresh when it goes on. The last one has the focus. */
  private async openPlan(question: ReviewQuestion): Promise<void> {
    const files = planFiles(question);
    for (const [index, file] of files.entries()) {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: index < files.length - 1 });
    }
  }

  private async guarded(what: string, body: () => Promise<unknown>): Promise<void> {
    try {
      await body();
    } catch (error) {
      void vscode.window.showErrorMessage(`${what} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async openQuestion(run: { runId: string; task: string }, question: ReviewQuestion): Promise<void> {
    const uri = this.docs.question(run, question);
    const doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== 'diff') {
      await vscode.languages.setTextDocumentLanguage(doc, 'diff');
    }
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: false });
  }

  /** The diff of the question a run waits on (palette, view). */
  async showQuestionDiff(target?: RunTarget): Promise<void> {
    const found = await this.resolve(target, 'approve');
    if (!found) {
      return;
    }
    const run = await this.status(found);
    if (!run.pending) {
      void vscode.window.showInformationMessage(`Run ${run.runId} does not wait for a review (${runNow(run)}).`);
      return;
    }
    await this.openQuestion(run, run.pending);
  }

  async approve(target?: RunTarget): Promise<RunStatusJson | undefined> {
    const found = await this.resolve(target, 'approve');
    return found ? this.respondTo(found, 'approve') : undefined;
  }

  async revise(target?: RunTarget): Promise<RunStatusJson | undefined> {
    const found = await this.resolve(target, 'revise');
    return found ? this.reviseTarget(found, found.run?.pending ?? undefined) : undefined;
  }

  private async reviseTarget(found: Resolved, question?: ReviewQuestion | null): Promise<RunStatusJson | undefined> {
    const stage = question?.name || question?.stage || found.run?.pending?.stage || 'the stage';
    const feedback = await vscode.window.showInputBox({
      title: `Revise ${stage}`,
      prompt: 'What should change? The stage runs again, told your feedback (its edits so far stay).',
      placeHolder: 'e.g. Keep the old name as an alias',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Say what to change'),
    });
    if (!feedback) {
      return undefined;
    }
    return this.respondTo(found, 'revise', feedback.trim(), question ?? undefined);
  }

  private async respondTo(found: Resolved, decision: ReviewDecision, feedback?: string, question?: ReviewQuestion): Promise<RunStatusJson> {
    await this.savePlan(question ?? found.run?.pending ?? this.tracker.get(found.runId)?.pending ?? undefined);
    const since = this.tracker.get(found.runId)?.events.length ?? 0;
    const run = await this.client.command<RunStatusJson>(ServerCommand.respond, {
      runId: found.runId,
      decision,
      feedback,
      root: found.root,
    });
    this.goesOn(found, run, since);
    return run;
  }

  /** After respond or resume: the run works again; follow it in a progress notification. */
  private goesOn(found: Resolved, run: RunStatusJson, since: number): void {
    const state = this.tracker.started(run.runId, run.task, run.workflow, found.root ?? null);
    this.tracker.resumed(run.runId, since);
    if (found.root) {
      this.store.remember(run, found.root);
    }
    this.store.refreshSoon();
    void this.follower.follow(run.runId, this.title(run.runId, state), since);
  }

  // -- messages, pruning, resume, cancel -------------------------------------------------------------

  async sendMessage(target?: RunTarget): Promise<RunMessage | undefined> {
    const found = await this.resolve(target, 'message');
    if (!found) {
      return undefined;
    }
    const text = await vscode.window.showInputBox({
      title: `Message to ${this.title(found.runId, found.run).replace(/^Agentic: /, '')}`,
      prompt: "Added to the run's next model call, whichever stage makes it",
      placeHolder: 'e.g. Use the logging module, not print',
      ignoreFocusOut: true,
      validateInput: (value) =>
        !value.trim() ? 'Type a message' : value.length > 4000 ? 'At most 4,000 characters' : undefined,
    });
    if (!text?.trim()) {
      return undefined;
    }
    const message = await this.client.command<RunMessage>(ServerCommand.sendMessage, {
      runId: found.runId,
      text: text.trim(),
      root: found.root,
    });
    void vscode.window.showInformationMessage(`Message ${message.id} queued for the run's next model call.`);
    this.store.refreshSoon();
    return message;
  }

  async prune(target?: RunTarget): Promise<RunStatusJson | undefined> {
    const found = await this.resolve(target, 'prune');
    if (!found) {
      return undefined;
    }
    let stage = found.stage;
    if (!stage) {
      const run = await this.status(found);
      const items = pruneItems(run);
      if (!items.length) {
        void vscode.window.showInformationMessage(`Run ${run.runId} has no ready or running stage to prune.`);
        return undefined;
      }
      stage = (
        await vscode.window.showQuickPick(items, {
          title: 'Agentic: Prune which stage?',
          placeHolder: 'A running stage is cancelled (its edits discarded); a ready one is skipped',
        })
      )?.value;
    }
    if (!stage) {
      return undefined;
    }
    const run = await this.client.command<RunStatusJson>(ServerCommand.prune, { runId: found.runId, stageId: stage, root: found.root });
    if (found.root) {
      this.store.remember(run, found.root);
    }
    this.store.refreshSoon();
    void vscode.window.showInformationMessage(`Stage ${stage} of run ${run.runId} is pruned.`);
    return run;
  }

  async resume(target?: RunTarget): Promise<RunStatusJson | undefined> {
    const found = await this.resolve(target, 'resume');
    if (!found) {
      return undefined;
    }
    const since = this.tracker.get(found.runId)?.events.length ?? 0;
    const run = await this.client.command<RunStatusJson>(ServerCommand.resumeRun, { runId: found.runId, root: found.root });
    this.goesOn(found, run, since);
    return run;
  }

  async cancel(target?: RunTarget): Promise<boolean> {
    const found = await this.resolve(target, 'cancel');
    if (!found) {
      return false;
    }
    const choice = await vscode.window.showWarningMessage(
      `Cancel run ${this.title(found.runId, found.run).replace(/^Agentic: /, '')}?`,
      { modal: true, detail: 'The run stops; what it proposed so far is not kept as a changeset.' },
      'Cancel Run',
    );
    if (choice !== 'Cancel Run') {
      return false;
    }
    const result = await this.client.command<{ cancelled: boolean }>(ServerCommand.cancelRun, { runId: found.runId, root: found.root });
    this.store.refreshSoon(0);
    if (!result.cancelled) {
      void vscode.window.showInformationMessage(`Run ${found.runId} had already ended.`);
    }
    return result.cancelled;
  }

  async showGraph(target?: RunTarget): Promise<void> {
    const found = await this.resolve(target, 'graph');
    if (found) {
      if (found.run) {
        this.tracker.update(found.run, found.root ?? null);
      }
      await this.follower.showRunGraph(found.runId, found.root);
    }
  }
}
