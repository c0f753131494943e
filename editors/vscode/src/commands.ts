/** The "Agentic" commands of the palette, the tree view and the diff editor's title bar. */

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { openChangesetReview, openFileDiff, type ChangesetStore, type ReviewDocuments } from './changesetViews';
import type { AgenticClient } from './client';
import type { GraphPanel } from './graphPanel';
import {
  acceptSummary,
  decisionArgs,
  describeNode,
  hunkLines,
  parseReviewQuery,
  REVIEW_SCHEME,
  type ChangeNode,
} from './logic/changesetModel';
import { describeStatus } from './logic/indexState';
import {
  ServerCommand,
  type AcceptResult,
  type ChangesetJson,
  type DecisionArgs,
  type IndexStatus,
  type RefreshResult,
  type RollbackResult,
  type SearchResult,
  type WorkflowInfo,
} from './logic/protocol';
import { searchItems, workflowItems, type PickItem } from './logic/quickPicks';
import { progressMessage, type RunState, type RunTracker } from './logic/runTracker';
import { formatUserError, toUserError } from './logic/serverErrors';

type Decision = 'accept' | 'reject';

export class Commands {
  constructor(
    private readonly client: AgenticClient,
    private readonly store: ChangesetStore,
    private readonly reviewDocs: ReviewDocuments,
    private readonly tracker: RunTracker,
    private readonly graph: GraphPanel,
    private readonly runLog: vscode.OutputChannel,
  ) {}

  register(context: vscode.ExtensionContext): void {
    const commands: Record<string, (...args: any[]) => unknown> = {
      'agenticLsp.runWorkflow': () => this.runWorkflow(),
      'agenticLsp.search': () => this.search(),
      'agenticLsp.showPendingChanges': () => this.showPendingChanges(),
      'agenticLsp.reviewChangeset': (node?: ChangeNode) => this.review(node),
      'agenticLsp.openFileDiff': (node: ChangeNode) => this.openNodeDiff(node),
      'agenticLsp.accept': (target?: ChangeNode | vscode.Uri) => this.decideTarget('accept', target),
      'agenticLsp.reject': (target?: ChangeNode | vscode.Uri) => this.decideTarget('reject', target),
      'agenticLsp.refine': (node?: ChangeNode) => this.refine(node),
      'agenticLsp.refreshChangeset': (node?: ChangeNode) => this.refreshChangeset(node),
      'agenticLsp.rollback': () => this.rollback(),
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

  private root(): string | undefined {
    const editor = vscode.window.activeTextEditor;
    const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    return (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath;
  }

  // -- runs -------------------------------------------------------------------------------------

  async runWorkflow(): Promise<RunState | undefined> {
    const root = this.root();
    const listed = await this.client.command<{ workflows: WorkflowInfo[] }>(ServerCommand.listWorkflows, { root });
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
    const started = await this.client.command<{ runId: string }>(ServerCommand.runWorkflow, {
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
        const stop = this.tracker.watch(runId, (_state, event) => {
          const message = progressMessage(event);
          if (message) {
            progress.report({ message });
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
    void this.announce(final);
    return final;
  }

  private async announce(state: RunState): Promise<void> {
    const scripted = state.scripted ? ' [scripted test model]' : '';
    if (state.status === 'succeeded' && state.changesetId) {
      const choice = await vscode.window.showInformationMessage(
        `Run succeeded${scripted}: changeset ${state.changesetId} is ready for review.`,
        'Review',
        'Accept',
        'Show Graph',
      );
      if (choice === 'Review') {
        await this.review(state.changesetId);
      } else if (choice === 'Accept') {
        await this.decide('accept', { changesetId: state.changesetId, root: state.root ?? undefined }, 'the changeset');
      } else if (choice === 'Show Graph') {
        await this.showRunGraph(state.runId);
      }
    } else if (state.status === 'succeeded') {
      const choice = await vscode.window.showInformationMessage(
        `Run succeeded${scripted} (no changes proposed).`,
        'Show Log',
      );
      if (choice === 'Show Log') {
        this.runLog.show(true);
      }
    } else if (state.status === 'cancelled') {
      void vscode.window.showInformationMessage('The run was cancelled; nothing was changed.');
    } else {
      const choice = await vscode.window.showErrorMessage(
        `Run ${state.status}: ${state.error || 'see the run log'}`,
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
    const changeset = node?.changeset ?? (await this.pickChangeset('Refine which changeset?'));
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
    const started = await this.client.command<{ runId: string }>(ServerCommand.refine, {
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
      (_progress, token) => this.client.command<Record<string, unknown>>(ServerCommand.reindex, { root: this.root() }, token),
    );
    if (typeof summary.failed === 'string') {
      void vscode.window.showErrorMessage(`Re-indexing failed: ${summary.failed}`);
      return;
    }
    const verdict = summary.cancelled ? 'cancelled' : 'done';
    void vscode.window.showInformationMessage(
      `Re-index ${verdict}: ${summary.files} files, ${summary.symbols} symbols ` +
        `(${summary.parsed} parsed, ${summary.unchanged} unchanged, ${summary.removed} removed).`,
    );
  }

  async showIndexStatus(): Promise<void> {
    const status = await this.client.command<{ roots: IndexStatus[] }>(ServerCommand.indexStatus, {});
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
      description: `run ${run.runId} · ${run.currentStage ? `running ${run.currentStage}` : run.status}`,
      value: { runId: run.runId },
    }));
    let workflows: WorkflowInfo[] = [];
    try {
      workflows = (await this.client.command<{ workflows: WorkflowInfo[] }>(ServerCommand.listWorkflows, { root: this.root() })).workflows;
    } catch (error) {
      if (!runs.length) {
        throw error;
      }
    }
    const items: (PickItem<Target> | vscode.QuickPickItem)[] = [
      ...(runs.length ? [{ label: 'Runs', kind: vscode.QuickPickItemKind.Separator }] : []),
      ...runs,
      { label: 'Workflows', kind: vscode.QuickPickItemKind.Separator },
      ...workflows.map<PickItem<Target>>((w) => ({ label: `$(type-hierarchy) ${w.name}`, description: w.workflow_type, value: { workflow: w.name } })),
    ];
    const picked = (await vscode.window.showQuickPick(items, { title: 'Agentic: Show Workflow Graph' })) as PickItem<Target> | undefined;
    if (!picked?.value) {
      return;
    }
    if (picked.value.runId) {
      await this.showRunGraph(picked.value.runId);
    } else if (picked.value.workflow) {
      const { mermaid } = await this.client.command<{ mermaid: string }>(ServerCommand.workflowGraph, {
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
      mermaid = (await this.client.command<{ mermaid: string }>(ServerCommand.workflowGraph, { runId })).mermaid;
    }
    this.graph.showRun(runId, mermaid);
  }

  // -- review --------------------------------------------------------------------------------------

  async showPendingChanges(): Promise<void> {
    await this.store.refresh();
    await vscode.commands.executeCommand('agenticPendingChanges.focus');
    if (!this.store.pending.length) {
      void vscode.window.showInformationMessage(this.store.lastError || 'No pending changes.');
    }
  }

  private async pickChangeset(title: string): Promise<ChangesetJson | undefined> {
    await this.store.refresh();
    if (this.store.lastError) {
      throw new Error(this.store.lastError);
    }
    if (!this.store.pending.length) {
      void vscode.window.showInformationMessage('No pending changes.');
      return undefined;
    }
    if (this.store.pending.length === 1) {
      return this.store.pending[0];
    }
    const picked = await vscode.window.showQuickPick(
      this.store.pending.map((cs) => ({
        label: cs.title || cs.id,
        description: `${cs.files.length} file(s) · ${cs.status}`,
        detail: cs.files.map((f) => f.path).join(', '),
        value: cs,
      })),
      { title },
    );
    return picked?.value;
  }

  async review(target?: ChangeNode | string): Promise<void> {
    let id: string | undefined;
    if (typeof target === 'string') {
      id = target;
    } else if (target) {
      id = target.changeset.id;
    } else {
      id = (await this.pickChangeset('Review which changeset?'))?.id;
    }
    if (!id) {
      return;
    }
    const changeset = await this.store.get(id);
    await openChangesetReview(changeset);
  }

  private async openNodeDiff(node: ChangeNode): Promise<void> {
    if (node.type === 'changeset') {
      await this.review(node);
      return;
    }
    const full = await this.store.get(node.changeset.id);
    const file = full.files.find((f) => f.path === node.file.path) ?? node.file;
    const line = node.type === 'hunk' ? node.hunk.proposedStart : undefined;
    await openFileDiff(full, file, line);
  }

  /** The node a palette, tree or diff-title invocation means (asking when it is not given). */
  private async resolveTarget(target: ChangeNode | vscode.Uri | undefined, verb: string): Promise<ChangeNode | undefined> {
    if (target instanceof vscode.Uri) {
      if (target.scheme !== REVIEW_SCHEME) {
        return undefined;
      }
      const ref = parseReviewQuery(target.query);
      const changeset = await this.store.get(ref.changesetId);
      const file = changeset.files.find((f) => f.path === ref.path);
      return file ? { type: 'file', changeset, file } : { type: 'changeset', changeset };
    }
    if (target) {
      return target;
    }
    const summary = await this.pickChangeset(`${verb} which changeset?`);
    if (!summary) {
      return undefined;
    }
    const changeset = await this.store.get(summary.id);
    type Scope = PickItem<ChangeNode>;
    const scopes: Scope[] = [
      { label: `$(git-pull-request) The whole changeset`, description: `${changeset.files.length} file(s)`, value: { type: 'changeset', changeset } },
      ...changeset.files
        .filter((f) => f.pendingHunks.length || f.status === 'pending')
        .map<Scope>((file) => ({ label: `$(file) ${file.path}`, description: `${file.op} · ${file.pendingHunks.length} pending change(s)`, value: { type: 'file', changeset, file } })),
    ];
    const scope = scopes.length === 2 ? scopes[0] : await vscode.window.showQuickPick(scopes, { title: `${verb}: what?` });
    if (!scope || scope.value.type !== 'file' || (scope.value.file.hunks ?? []).filter((h) => h.status === 'pending').length < 2) {
      return scope?.value;
    }
    const file = scope.value.file;
    const hunks: Scope[] = [
      { label: `$(file) All of ${file.path}`, value: scope.value },
      ...(file.hunks ?? [])
        .filter((h) => h.status === 'pending')
        .map<Scope>((hunk) => ({
          label: `$(diff) ${hunkLines(hunk)}`,
          detail: hunk.lines.filter((l) => l.startsWith('+') || l.startsWith('-')).slice(0, 3).join(' ').slice(0, 160),
          value: { type: 'hunk', changeset, file, hunk },
        })),
    ];
    return (await vscode.window.showQuickPick(hunks, { title: `${verb}: which change in ${file.path}?` }))?.value;
  }

  async decideTarget(kind: Decision, target?: ChangeNode | vscode.Uri): Promise<unknown> {
    const node = await this.resolveTarget(target ?? this.activeReviewUri(), kind === 'accept' ? 'Accept' : 'Reject');
    if (!node) {
      return undefined;
    }
    return this.decide(kind, decisionArgs(node), describeNode(node));
  }

  private activeReviewUri(): vscode.Uri | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return uri?.scheme === REVIEW_SCHEME ? uri : undefined;
  }

  /**
   * Accept or reject through the server. An accept comes back as a `workspace/applyEdit` whose
   * edits need confirmation, so VS Code shows its refactor preview before anything changes.
   */
  async decide(kind: Decision, args: DecisionArgs, what: string): Promise<AcceptResult | ChangesetJson | undefined> {
    const command = kind === 'accept' ? ServerCommand.acceptChangeset : ServerCommand.rejectChangeset;
    try {
      const result = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: kind === 'accept' ? `Accepting ${what}: tick the changes in the Refactor Preview, then Apply` : `Rejecting ${what}`,
        },
        () => this.client.command<AcceptResult | ChangesetJson>(command, args),
      );
      if (kind === 'accept') {
        await saveWhatTheServerWrote(result as AcceptResult);
        void vscode.window.showInformationMessage(acceptSummary(result as AcceptResult));
      } else {
        void vscode.window.showInformationMessage(`Rejected ${what}.`);
      }
      return result;
    } catch (error) {
      const user = toUserError(error);
      if (user.stale) {
        const choice = await vscode.window.showWarningMessage(formatUserError(error), 'Refresh Changeset');
        if (choice === 'Refresh Changeset') {
          await this.refreshById(args.changesetId);
        }
        return undefined;
      }
      throw error;
    } finally {
      await this.afterDecision();
    }
  }

  private async afterDecision(): Promise<void> {
    await this.store.refresh();
    this.reviewDocs.refreshOpen();
  }

  async refreshChangeset(node?: ChangeNode): Promise<void> {
    const changeset = node?.changeset ?? (await this.pickChangeset('Refresh which changeset?'));
    if (changeset) {
      await this.refreshById(changeset.id);
    }
  }

  async refreshById(changesetId: string): Promise<RefreshResult> {
    const result = await this.client.command<RefreshResult>(ServerCommand.refreshChangeset, { changesetId });
    await this.afterDecision();
    if (result.conflicts.length) {
      const lines = result.conflicts.map((c) => `${c.path}: ${c.reason}`).join('; ');
      void vscode.window.showWarningMessage(`Some changes no longer apply: ${lines}. Refine or reject them.`);
    } else {
      void vscode.window.showInformationMessage('The changeset was rebased onto the current text.');
    }
    return result;
  }

  async rollback(): Promise<RollbackResult | undefined> {
    const choice = await vscode.window.showWarningMessage(
      'Roll back the last accepted changeset?',
      { modal: true, detail: 'Its files are restored to what they were before the accept (with a revert commit when it was committed).' },
      'Roll Back',
    );
    if (choice !== 'Roll Back') {
      return undefined;
    }
    const result = await this.client.command<RollbackResult>(ServerCommand.rollback, { root: this.root() });
    await this.afterDecision();
    const commit = result.revertCommitId ? ` (revert commit ${result.revertCommitId.slice(0, 8)})` : '';
    void vscode.window.showInformationMessage(`Rolled back changeset ${result.changesetId}: ${result.files.join(', ')}${commit}.`);
    return result;
  }

  // -- code actions (server commands run from the lightbulb) ---------------------------------------

  /** Middleware for server commands VS Code runs itself (code actions): show what they did. */
  async serverCommand(command: string, args: any[], next: (command: string, args: any[]) => Promise<any>): Promise<any> {
    const arg = (args[0] ?? {}) as DecisionArgs & { path?: string };
    try {
      switch (command) {
        case ServerCommand.acceptChangeset:
          return await this.decide('accept', arg, arg.hunks ? `the change in ${arg.path}` : arg.path ? arg.path : 'the changeset');
        case ServerCommand.rejectChangeset:
          return await this.decide('reject', arg, arg.hunks ? `the change in ${arg.path}` : arg.path ? arg.path : 'the changeset');
        case ServerCommand.refreshChangeset:
          return await this.refreshById(arg.changesetId);
        case ServerCommand.showChangeset: {
          const changeset = await this.store.get(arg.changesetId);
          const file = changeset.files.find((f) => f.path === arg.path);
          if (file) {
            await openFileDiff(changeset, file);
          } else {
            await openChangesetReview(changeset);
          }
          return changeset;
        }
        default:
          return await next(command, args);
      }
    } catch (error) {
      void vscode.window.showErrorMessage(formatUserError(error, command));
      return undefined;
    }
  }
}

/**
 * The server also wrote (and committed) the accepted files whose buffers were clean before the
 * accept; their buffers now hold the same text as the disk but show as modified. Save those,
 * and only when buffer and disk agree, so no unsaved work of the user is ever written.
 */
async function saveWhatTheServerWrote(result: AcceptResult): Promise<void> {
  const root = result.changeset.root;
  for (const rel of result.written) {
    const file = path.join(root, rel);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
    if (!doc?.isDirty) {
      continue;
    }
    try {
      if (fs.readFileSync(file, 'utf8') === doc.getText()) {
        await doc.save();
      }
    } catch {
      // a file that cannot be read stays as the editor has it
    }
  }
}

function commandTitle(id: string): string {
  const name = id.replace(/^agenticLsp\./, '');
  return name.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}
