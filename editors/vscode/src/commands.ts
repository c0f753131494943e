/** The "Agentic" commands: runs, search, index and graph. Every command is registered here; the
 * review commands (tree view, diff editor title, lightbulb) are in reviewCommands.ts, steering
 * runs in runSteering.ts, "Fix this" / "Explain this" in editorActions.ts. */

import * as vscode from 'vscode';
import type { ChangesetStore } from './changesetViews';
import type { AgenticClient } from './client';
import { EditorActions, editorPlace, type ActionRequest } from './editorActions';
import type { GraphPanel } from './graphPanel';
import type { ChangeNode } from './logic/changesetModel';
import { buildEditorContext, describeContext } from './logic/editorContext';
import { describeStatus } from './logic/indexState';
import {
  ServerCommand,
  type IndexStatusResult,
  type ListWorkflowsResult,
  type ReindexResult,
  type RunStarted,
  type RunStatusJson,
  type RunWorkflowArgs,
  type SearchResult,
  type WorkflowGraphResult,
  type WorkflowInfo,
} from './logic/protocol';
import { searchItems, workflowItems, type PickItem } from './logic/quickPicks';
import {
  progressMessage,
  progressStatus,
  runSummary,
  usageText,
  type RunState,
  type RunTracker,
} from './logic/runTracker';
import { formatUserError, toUserError } from './logic/serverErrors';
import type { ReviewCommands } from './reviewCommands';
import { RunSteering, type RunTarget } from './runSteering';
import type { RunDocuments, RunStore } from './runsView';

interface FollowOptions {
  /** Open the run's answer (an explanation) when it has one. */
  openAnswer?: boolean;
  /** The run may start without its editor context when the server refuses that. */
  contextOptional?: boolean;
}

export class Commands {
  readonly steering: RunSteering;
  readonly actions: EditorActions;

  constructor(
    private readonly client: AgenticClient,
    private readonly store: ChangesetStore,
    private readonly tracker: RunTracker,
    private readonly graph: GraphPanel,
    private readonly runLog: vscode.OutputChannel,
    readonly review: ReviewCommands,
    readonly runs: RunStore,
    private readonly docs: RunDocuments,
  ) {
    this.steering = new RunSteering(client, tracker, runs, docs, {
      follow: (runId, title, since) => this.followRun(runId, title, since),
      showRunGraph: (runId, root) => this.showRunGraph(runId, root),
    });
    this.actions = new EditorActions({ runFromEditor: (request, workflow) => this.runFromEditor(request, workflow) });
  }

  register(context: vscode.ExtensionContext): void {
    const commands: Record<string, (...args: any[]) => unknown> = {
      'agenticLsp.runWorkflow': () => this.runWorkflow(),
      'agenticLsp.search': () => this.search(),
      'agenticLsp.showPendingChanges': () => this.review.showPendingChanges(),
      'agenticLsp.reviewChangeset': (node?: ChangeNode) => this.review.review(node),
      'agenticLsp.openFileDiff': (node: ChangeNode) => this.review.openNodeDiff(node),
      'agenticLsp.accept': (target?: ChangeNode | vscode.Uri) => this.review.decideTarget('accept', target),
      'agenticLsp.reject': (target?: ChangeNode | vscode.Uri) => this.review.decideTarget('reject', target),
      'agenticLsp.refine': (node?: ChangeNode) => this.refine(node),
      'agenticLsp.refreshChangeset': (node?: ChangeNode) => this.review.refreshChangeset(node),
      'agenticLsp.rollback': () => this.review.rollback(this.root()),
      'agenticLsp.reindex': () => this.reindex(),
      'agenticLsp.showIndexStatus': () => this.showIndexStatus(),
      'agenticLsp.showWorkflowGraph': () => this.showWorkflowGraph(),
      'agenticLsp.refreshPendingChanges': () => this.store.refresh(),
      'agenticLsp.restartServer': () => this.client.restart(),
      'agenticLsp.showOutput': () => this.client.output.show(true),
      'agenticLsp.fixSelection': (request?: unknown) => this.actions.fix(request),
      'agenticLsp.explainSelection': (request?: unknown) => this.actions.explain(request),
      'agenticLsp.showRuns': () => this.showRuns(),
      'agenticLsp.refreshRuns': () => this.runs.refresh(),
      'agenticLsp.approveRun': (target?: RunTarget) => this.steering.approve(target),
      'agenticLsp.reviseRun': (target?: RunTarget) => this.steering.revise(target),
      'agenticLsp.showReviewDiff': (target?: RunTarget) => this.steering.showQuestionDiff(target),
      'agenticLsp.sendRunMessage': (target?: RunTarget) => this.steering.sendMessage(target),
      'agenticLsp.pruneStage': (target?: RunTarget) => this.steering.prune(target),
      'agenticLsp.resumeRun': (target?: RunTarget) => this.steering.resume(target),
      'agenticLsp.cancelRun': (target?: RunTarget) => this.steering.cancel(target),
      'agenticLsp.showRunGraph': (target?: RunTarget) => this.steering.showGraph(target),
    };
    for (const [id, handler] of Object.entries(commands)) {
      context.subscriptions.push(vscode.commands.registerCommand(id, (...args) => this.guard(id, () => handler(...args))));
    }
  }

  private async guard(id: string, body: () => unknown): Promise<unknown> {
    try {
      return await body();
    } catch (error) {
      const user = toUserError(error);
      if (!user.cancelled) {
        void vscode.window.showErrorMessage(formatUserError(error, commandTitle(id)));
      }
      return undefined;
    }
  }

  root(): string | undefined {
    const editor = vscode.window.activeTextEditor;
    const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    return (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath;
  }

  // -- runs -------------------------------------------------------------------------------------

  async runWorkflow(): Promise<RunState | undefined> {
    const root = this.root();
    // where the user is goes with the run: the server pins the selected code (or the code
    // around the cursor) first in every stage's context
    const place = editorPlace(vscode.window.activeTextEditor);
    const listed = await this.client.command<ListWorkflowsResult>(ServerCommand.listWorkflows, { root });
    const picked = await vscode.window.showQuickPick(workflowItems(listed.workflows), {
      title: 'Agentic: Run Workflow',
      placeHolder: 'Pick a workflow (Auto lets the orchestrator choose)',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!picked) {
      return undefined;
    }
    const context = place ? buildEditorContext(place) : undefined;
    const where = context ? ` (with ${describeContext(context, vscode.workspace.asRelativePath(vscode.Uri.parse(context.uri), false))})` : '';
    const task = await vscode.window.showInputBox({
      title: `Agentic: ${picked.value ?? 'Auto'}${where}`,
      prompt: 'What should the agents do?',
      placeHolder: 'e.g. Add a discount_total(items, percent) function with tests',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Describe the task'),
    });
    if (!task) {
      return undefined;
    }
    return this.startRun(
      { task: task.trim(), workflow: picked.value ?? undefined, root, context },
      `Agentic: ${picked.value ?? 'Auto'}`,
      { contextOptional: true },
    );
  }

  /** "Fix this" / "Explain this": a run with the editor's context, its task written for it. */
  async runFromEditor(request: ActionRequest, workflow: string | undefined): Promise<RunState | undefined> {
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(request.context.uri));
    this.runLog.appendLine(`── ${request.task}: ${describeContext(request.context, request.label)}`);
    const verb = request.kind === 'fix' ? 'fixing' : 'explaining';
    return this.startRun(
      { task: request.task, workflow, root: folder?.uri.fsPath ?? this.root(), context: request.context },
      `Agentic: ${verb} ${describeContext(request.context, request.label)}`,
      { openAnswer: request.kind === 'explain' },
    );
  }

  /**
   * Start a run and follow it. A context the server cannot use (an ignored or secret file, a
   * document outside the folder) only costs the context on the palette's runs: the run starts
   * without it, and a warning says why.
   */
  async startRun(args: RunWorkflowArgs, title: string, options: FollowOptions = {}): Promise<RunState> {
    let started: RunStarted;
    try {
      started = await this.client.command<RunStarted>(ServerCommand.runWorkflow, args);
    } catch (error) {
      const message = toUserError(error).message;
      const aboutContext = /context/i.test(message);
      if (!args.context || !aboutContext || !options.contextOptional) {
        throw error;
      }
      void vscode.window.showWarningMessage(`The run starts without the editor's context: ${message}`);
      started = await this.client.command<RunStarted>(ServerCommand.runWorkflow, { ...args, context: undefined });
    }
    this.tracker.started(started.runId, args.task, args.workflow ?? null, args.root ?? null);
    this.runs.refreshSoon();
    return this.followRun(started.runId, title, 0, options);
  }

  /**
   * Live progress of a run in a cancellable notification, until it ends or waits at a review gate
   * (`since`: the index of the run's first event to log, for a run that goes on); the outcome
   * offers what to do next.
   */
  async followRun(runId: string, title: string, since = 0, options: FollowOptions = {}): Promise<RunState> {
    this.runLog.appendLine(`── run ${runId}${since ? ' goes on' : ''}: ${this.tracker.get(runId)?.task ?? ''}`);
    const final = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => {
          void this.client
            .command(ServerCommand.cancelRun, { runId })
            .catch((error) => this.runLog.appendLine(formatUserError(error, 'Cancelling the run')));
        });
        const stop = this.tracker.watch(runId, (state, event) => {
          const status = progressStatus(state, event);
          if (status) {
            progress.report({ message: status });
          }
          const message = progressMessage(event);
          if (message) {
            this.runLog.appendLine(`  ${message}`);
          }
          if (event.kind === 'stage_finished' && typeof event.data.summary === 'string' && event.data.summary) {
            this.runLog.appendLine(`    ${event.data.summary.split('\n').join('\n    ')}`);
          }
        }, since);
        try {
          return await this.tracker.settled(runId);
        } finally {
          stop();
        }
      },
    );
    this.runLog.appendLine(`── ${runSummary(final)}`);
    if (final.answer) {
      this.runLog.appendLine(`    ${final.answer.split('\n').join('\n    ')}`);
    }
    void this.announce(final, options);
    return final;
  }

  private async showAnswer(state: RunState): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(this.docs.answer(state));
    if (doc.languageId !== 'markdown') {
      await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    }
    await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
  }

  private async announce(state: RunState, options: FollowOptions = {}): Promise<void> {
    const scripted = state.scripted ? ' [scripted test model]' : '';
    const tokens = ` (${usageText(state.usage)})`;
    if (state.status === 'waiting_input') {
      if (state.pending) {
        this.steering.notifyWaiting(state.runId, state.pending, state.root ?? undefined);
      }
      return;
    }
    if (state.status === 'interrupted') {
      const choice = await vscode.window.showWarningMessage(
        `Run interrupted${tokens}: the server stopped while it worked; it can go on from its last completed stage.`,
        'Resume',
        'Show Graph',
      );
      if (choice === 'Resume') {
        await this.steering.resume(state.runId);
      } else if (choice === 'Show Graph') {
        await this.showRunGraph(state.runId);
      }
      return;
    }
    if (state.status === 'succeeded' && !state.changesetId && state.answer) {
      if (options.openAnswer) {
        await this.showAnswer(state);
        return;
      }
      const choice = await vscode.window.showInformationMessage(`Run succeeded${scripted}${tokens}: the answer is ready.`, 'Show Answer');
      if (choice === 'Show Answer') {
        await this.showAnswer(state);
      }
      return;
    }
    if (state.status === 'succeeded' && state.changesetId) {
      const choice = await vscode.window.showInformationMessage(
        `Run succeeded${scripted}${tokens}: changeset ${state.changesetId} is ready for review.`,
        'Review',
        'Accept',
        'Show Graph',
      );
      if (choice === 'Review') {
        await this.review.review(state.changesetId);
      } else if (choice === 'Accept') {
        await this.review.decide('accept', { changesetId: state.changesetId, root: state.root ?? undefined }, 'the changeset');
      } else if (choice === 'Show Graph') {
        await this.showRunGraph(state.runId);
      }
    } else if (state.status === 'succeeded') {
      const choice = await vscode.window.showInformationMessage(
        `Run succeeded${scripted} (no changes proposed)${tokens}.`,
        'Show Log',
      );
      if (choice === 'Show Log') {
        this.runLog.show(true);
      }
    } else if (state.status === 'cancelled') {
      void vscode.window.showInformationMessage('The run was cancelled; nothing was changed.');
    } else {
      const choice = await vscode.window.showErrorMessage(
        `Run ${state.status}${tokens}: ${state.error || 'see the run log'}`,
        'Show Log',
        'Show Graph',
      );
      if (choice === 'Show Log') {
        this.runLog.show(true);
      } else if (choice === 'Show Graph') {
        await this.showRunGraph(state.runId);
      }
    }
  }

  async refine(node?: ChangeNode): Promise<RunState | undefined> {
    const changeset = node?.changeset ?? (await this.review.pickChangeset('Refine which changeset?'));
    if (!changeset) {
      return undefined;
    }
    const feedback = await vscode.window.showInputBox({
      title: `Refine "${changeset.title}"`,
      prompt: 'What should change in the proposal? It is set aside and the run goes again.',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Say what to change'),
    });
    if (!feedback) {
      return undefined;
    }
    const started = await this.client.command<RunStarted>(ServerCommand.refine, {
      changesetId: changeset.id,
      feedback: feedback.trim(),
    });
    this.tracker.started(started.runId, `refine: ${changeset.title}`, null, changeset.root);
    void this.store.refresh();
    return this.followRun(started.runId, `Agentic: refining "${changeset.title}"`);
  }

  // -- search and index ----------------------------------------------------------------------------

  async search(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : '';
    const query = await vscode.window.showInputBox({
      title: 'Agentic: Search Codebase',
      prompt: 'Describe what you are looking for (semantic search over the index)',
      value: selected.slice(0, 200),
    });
    if (!query?.trim()) {
      return;
    }
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Agentic: searching…' },
      () => this.client.command<SearchResult>(ServerCommand.search, { query: query.trim(), limit: 30, root: this.root() }),
    );
    if (!result.results.length) {
      const notes = result.notes.length ? ` (${result.notes.join('; ')})` : '';
      void vscode.window.showInformationMessage(`No results for "${query}"${notes}.`);
      return;
    }
    const picked = await vscode.window.showQuickPick(searchItems(result.results), {
      title: `Agentic: ${result.results.length} results for "${query}"`,
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (picked) {
      const hit = picked.value;
      const line = hit.range.start.line;
      await vscode.window.showTextDocument(vscode.Uri.parse(hit.uri), {
        selection: new vscode.Range(line, 0, line, 0),
      });
    }
  }

  async reindex(): Promise<void> {
    const summary = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Agentic: re-indexing', cancellable: true },
      (_progress, token) => this.client.command<ReindexResult>(ServerCommand.reindex, { root: this.root() }, token),
    );
    if ('failed' in summary) {
      void vscode.window.showErrorMessage(`Re-indexing failed: ${summary.failed}`);
      return;
    }
    if ('started' in summary) {
      return;
    }
    const verdict = summary.cancelled ? 'cancelled' : 'done';
    void vscode.window.showInformationMessage(
      `Re-index ${verdict}: ${summary.files} files, ${summary.symbols} symbols ` +
        `(${summary.parsed} parsed, ${summary.unchanged} unchanged, ${summary.removed} removed).`,
    );
  }

  async showIndexStatus(): Promise<void> {
    const status = await this.client.command<IndexStatusResult>(ServerCommand.indexStatus, {});
    const detail = status.roots.map((r) => describeStatus(r).join('\n')).join('\n\n');
    const choice = await vscode.window.showInformationMessage(
      'Agentic index status',
      { modal: true, detail: detail || 'No workspace folder is indexed.' },
      'Reindex',
    );
    if (choice === 'Reindex') {
      await this.reindex();
    }
  }

  // -- graph ---------------------------------------------------------------------------------------

  async showWorkflowGraph(): Promise<void> {
    type Target = { runId?: string; workflow?: string };
    const runs = this.tracker.all().map<PickItem<Target>>((run) => ({
      label: `$(${run.status === 'running' ? 'sync~spin' : 'history'}) ${run.task || run.runId}`,
      description: `run ${run.runId} · ${run.currentStage ? `running ${run.currentStage}` : run.status} · ${usageText(run.usage)}`,
      value: { runId: run.runId },
    }));
    let workflows: WorkflowInfo[] = [];
    try {
      workflows = (await this.client.command<ListWorkflowsResult>(ServerCommand.listWorkflows, { root: this.root() })).workflows;
    } catch (error) {
      if (!runs.length) {
        throw error;
      }
    }
    const items: (PickItem<Target> | vscode.QuickPickItem)[] = [
      ...(runs.length ? [{ label: 'Runs', kind: vscode.QuickPickItemKind.Separator }] : []),
      ...runs,
      { label: 'Workflows', kind: vscode.QuickPickItemKind.Separator },
      ...workflows.map<PickItem<Target>>((w) => ({ label: `$(type-hierarchy) ${w.name}`, description: w.workflowType, value: { workflow: w.name } })),
    ];
    const picked = (await vscode.window.showQuickPick(items, { title: 'Agentic: Show Workflow Graph' })) as PickItem<Target> | undefined;
    if (!picked?.value) {
      return;
    }
    if (picked.value.runId) {
      await this.showRunGraph(picked.value.runId);
    } else if (picked.value.workflow) {
      const { mermaid } = await this.client.command<WorkflowGraphResult>(ServerCommand.workflowGraph, {
        workflow: picked.value.workflow,
        root: this.root(),
      });
      this.graph.showWorkflow(picked.value.workflow, mermaid);
    }
  }

  async showRunGraph(runId: string, root?: string): Promise<void> {
    let state = this.tracker.get(runId);
    if (!state?.events.length) {
      // a run this window saw no event of: its status says where it is
      try {
        const status = await this.client.command<RunStatusJson>(ServerCommand.runStatus, { runId, root });
        state = this.tracker.update(status, root ?? null);
      } catch (error) {
        if (!state) {
          throw error;
        }
      }
    }
    let mermaid = state?.mermaid ?? '';
    if (!mermaid) {
      try {
        mermaid = (await this.client.command<WorkflowGraphResult>(ServerCommand.workflowGraph, { runId })).mermaid;
      } catch (error) {
        // a run of an earlier server process: its workflow's graph, every stage shown
        if (!state?.workflow) {
          throw error;
        }
        mermaid = (await this.client.command<WorkflowGraphResult>(ServerCommand.workflowGraph, { workflow: state.workflow, root })).mermaid;
      }
    }
    this.graph.showRun(runId, mermaid);
  }

  async showRuns(): Promise<void> {
    await this.runs.refresh();
    await vscode.commands.executeCommand('agenticRuns.focus');
  }
}

function commandTitle(id: string): string {
  const name = id.replace(/^agenticLsp\./, '');
  return name.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}
