/** The "Agentic" commands of the palette: runs, search, index and graph; the review commands
 * (tree view, diff editor title, lightbulb) are in reviewCommands.ts. */

import * as vscode from 'vscode';
import type { ChangesetStore } from './changesetViews';
import type { AgenticClient } from './client';
import type { GraphPanel } from './graphPanel';
import type { ChangeNode } from './logic/changesetModel';
import { describeStatus } from './logic/indexState';
import {
  ServerCommand,
  type IndexStatusResult,
  type ListWorkflowsResult,
  type ReindexResult,
  type RunStarted,
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

export class Commands {
  constructor(
    private readonly client: AgenticClient,
    private readonly store: ChangesetStore,
    private readonly tracker: RunTracker,
    private readonly graph: GraphPanel,
    private readonly runLog: vscode.OutputChannel,
    readonly review: ReviewCommands,
  ) {}

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
    const task = await vscode.window.showInputBox({
      title: `Agentic: ${picked.value ?? 'Auto'}`,
      prompt: 'What should the agents do?',
      placeHolder: 'e.g. Add a discount_total(items, percent) function with tests',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Describe the task'),
    });
    if (!task) {
      return undefined;
    }
    const started = await this.client.command<RunStarted>(ServerCommand.runWorkflow, {
      task: task.trim(),
      workflow: picked.value ?? undefined,
      root,
    });
    this.tracker.started(started.runId, task.trim(), picked.value, root ?? null);
    return this.followRun(started.runId, `Agentic: ${picked.value ?? 'Auto'}`);
  }

  /** Live progress of a run in a cancellable notification; the outcome offers what to do next. */
  async followRun(runId: string, title: string): Promise<RunState> {
    this.runLog.appendLine(`── run ${runId}: ${this.tracker.get(runId)?.task ?? ''}`);
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
        });
        try {
          return await this.tracker.finished(runId);
        } finally {
          stop();
        }
      },
    );
    this.runLog.appendLine(`── ${runSummary(final)}`);
    void this.announce(final);
    return final;
  }

  private async announce(state: RunState): Promise<void> {
    const scripted = state.scripted ? ' [scripted test model]' : '';
    const tokens = ` (${usageText(state.usage)})`;
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

  async showRunGraph(runId: string): Promise<void> {
    const state = this.tracker.get(runId);
    let mermaid = state?.mermaid ?? '';
    if (!mermaid) {
      mermaid = (await this.client.command<WorkflowGraphResult>(ServerCommand.workflowGraph, { runId })).mermaid;
    }
    this.graph.showRun(runId, mermaid);
  }
}

function commandTitle(id: string): string {
  const name = id.replace(/^agenticLsp\./, '');
  return name.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}
