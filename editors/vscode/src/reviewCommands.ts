/** Reviewing changesets: the pending-changes tree, the diff review, accept/reject (changeset,
 * file, hunk) from the tree, the diff editor's title bar, the palette or the lightbulb, refresh
 * and rollback. */

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { openChangesetReview, openFileDiff, type ChangesetStore, type ReviewDocuments } from './changesetViews';
import type { AgenticClient } from './client';
import {
  acceptSummary,
  decisionArgs,
  describeNode,
  hunkLines,
  parseReviewQuery,
  REVIEW_SCHEME,
  type ChangeNode,
} from './logic/changesetModel';
import {
  ServerCommand,
  type AcceptResult,
  type ChangesetJson,
  type DecisionArgs,
  type RefreshResult,
  type RollbackResult,
} from './logic/protocol';
import type { PickItem } from './logic/quickPicks';
import { formatUserError, toUserError } from './logic/serverErrors';

export type Decision = 'accept' | 'reject';

export class ReviewCommands {
  constructor(
    private readonly client: AgenticClient,
    private readonly store: ChangesetStore,
    private readonly reviewDocs: ReviewDocuments,
  ) {}

  // -- review-----------------------------------------------------------------------------------

  async showPendingChanges(): Promise<void> {
    await this.store.refresh();
    await vscode.commands.executeCommand('agenticPendingChanges.focus');
    if (!this.store.pending.length) {
      void vscode.window.showInformationMessage(this.store.lastError || 'No pending changes.');
    }
  }

  async pickChangeset(title: string): Promise<ChangesetJson | undefined> {
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

  async openNodeDiff(node: ChangeNode): Promise<void> {
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

  async rollback(root: string | undefined): Promise<RollbackResult | undefined> {
    const choice = await vscode.window.showWarningMessage(
      'Roll back the last accepted changeset?',
      { modal: true, detail: 'Its files are restored to what they were before the accept (with a revert commit when it was committed).' },
      'Roll Back',
    );
    if (choice !== 'Roll Back') {
      return undefined;
    }
    const result = await this.client.command<RollbackResult>(ServerCommand.rollback, { root });
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
