/**
 * Pending changes in VS Code: the tree view (changesets → files → hunks) and the read-only
 * `agentic-review:` documents the diff editor compares (original vs proposed text).
 */

import * as vscode from 'vscode';
import type { AgenticClient } from './client';
import {
  children,
  diffTitle,
  nodeView,
  parseReviewQuery,
  pendingChangesets,
  REVIEW_SCHEME,
  reviewText,
  reviewUriParts,
  type ChangeNode,
  type ReviewSide,
} from './logic/changesetModel';
import { ServerCommand, type ChangesetJson, type FileChangeJson, type ListChangesetsResult } from './logic/protocol';
import { formatUserError } from './logic/serverErrors';

/** Changesets as the server last described them: summaries, and full ones fetched on demand. */
export class ChangesetStore implements vscode.Disposable {
  private readonly changedEmitter = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changedEmitter.event;
  private full = new Map<string, Promise<ChangesetJson>>();
  pending: ChangesetJson[] = [];
  lastError = '';

  constructor(private readonly client: AgenticClient) {}

  async refresh(): Promise<void> {
    this.full = new Map();
    if (!this.client.running) {
      this.pending = [];
    } else {
      try {
        const result = await this.client.command<ListChangesetsResult>(ServerCommand.listChangesets, {});
        this.pending = pendingChangesets(result.changesets);
        this.lastError = '';
      } catch (error) {
        this.lastError = formatUserError(error, 'Listing changesets');
      }
    }
    this.changedEmitter.fire();
  }

  /** The changeset with originals, proposals and hunks (cached until the next refresh). */
  get(changesetId: string): Promise<ChangesetJson> {
    let found = this.full.get(changesetId);
    if (!found) {
      found = this.client.command<ChangesetJson>(ServerCommand.showChangeset, { changesetId });
      found.catch(() => this.full.delete(changesetId));
      this.full.set(changesetId, found);
    }
    return found;
  }

  /** Put a full changeset the server just returned into the cache. */
  remember(changeset: ChangesetJson): void {
    if (changeset.files.every((f) => f.hunks !== undefined)) {
      this.full.set(changeset.id, Promise.resolve(changeset));
    }
  }

  dispose(): void {
    this.changedEmitter.dispose();
  }
}

export class ChangesetTree implements vscode.TreeDataProvider<ChangeNode> {
  private readonly changedEmitter = new vscode.EventEmitter<ChangeNode | undefined>();
  readonly onDidChangeTreeData = this.changedEmitter.event;

  constructor(private readonly store: ChangesetStore) {
    store.onDidChange(() => this.changedEmitter.fire(undefined));
  }

  getTreeItem(node: ChangeNode): vscode.TreeItem {
    const view = nodeView(node);
    const item = new vscode.TreeItem(
      view.label,
      view.collapsible
        ? node.type === 'changeset'
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed
        : vscode.TreeItemCollapsibleState.None,
    );
    item.description = view.description;
    item.tooltip = view.tooltip;
    item.contextValue = view.contextValue;
    item.iconPath = new vscode.ThemeIcon(view.icon);
    item.id = nodeId(node);
    if (node.type === 'file') {
      item.command = { command: 'agenticLsp.openFileDiff', title: 'Open Diff', arguments: [node] };
      item.resourceUri = vscode.Uri.file(node.file.path);
    } else if (node.type === 'hunk') {
      item.command = { command: 'agenticLsp.openFileDiff', title: 'Open Diff', arguments: [node] };
    }
    return item;
  }

  async getChildren(node?: ChangeNode): Promise<ChangeNode[]> {
    if (!node) {
      return this.store.pending.map((changeset) => ({ type: 'changeset', changeset }));
    }
    if (node.type === 'changeset') {
      try {
        const full = await this.store.get(node.changeset.id);
        return children({ type: 'changeset', changeset: full });
      } catch (error) {
        void vscode.window.showErrorMessage(formatUserError(error, 'Showing the changeset'));
        return children(node);
      }
    }
    return children(node);
  }
}

function nodeId(node: ChangeNode): string {
  const base = `${node.changeset.id}@${node.changeset.status}`;
  if (node.type === 'changeset') {
    return base;
  }
  if (node.type === 'file') {
    return `${base}/${node.file.path}@${node.file.status}`;
  }
  return `${base}/${node.file.path}#${node.hunk.index}@${node.hunk.status}`;
}

export function reviewUri(changesetId: string, path: string, side: ReviewSide): vscode.Uri {
  const parts = reviewUriParts({ changesetId, path, side });
  return vscode.Uri.from({ scheme: REVIEW_SCHEME, path: parts.path, query: parts.query });
}

export class ReviewDocuments implements vscode.TextDocumentContentProvider {
  private readonly changedEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changedEmitter.event;

  constructor(private readonly store: ChangesetStore) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseReviewQuery(uri.query);
    const changeset = await this.store.get(ref.changesetId);
    const file = changeset.files.find((f) => f.path === ref.path);
    if (!file) {
      throw new Error(`changeset ${ref.changesetId} has no file ${ref.path}`);
    }
    return reviewText(file, ref.side);
  }

  /** Ask the diff editors showing review documents to read them again. */
  refreshOpen(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === REVIEW_SCHEME) {
        this.changedEmitter.fire(doc.uri);
      }
    }
  }
}

/** Open one file of a changeset in the diff editor (original ↔ proposed). */
export async function openFileDiff(changeset: ChangesetJson, file: FileChangeJson, line?: number): Promise<void> {
  const left = reviewUri(changeset.id, file.path, 'original');
  const right = reviewUri(changeset.id, file.path, 'proposed');
  const options: vscode.TextDocumentShowOptions = { preview: true };
  if (line !== undefined) {
    options.selection = new vscode.Range(line, 0, line, 0);
  }
  await vscode.commands.executeCommand('vscode.diff', left, right, diffTitle(changeset, file), options);
}

/** Review a whole changeset: one diff, or the multi-file diff editor for several files. */
export async function openChangesetReview(changeset: ChangesetJson): Promise<void> {
  if (changeset.files.length === 1) {
    await openFileDiff(changeset, changeset.files[0]);
    return;
  }
  const resources = changeset.files.map((f) => [
    vscode.Uri.file(`${changeset.root}/${f.path}`),
    reviewUri(changeset.id, f.path, 'original'),
    reviewUri(changeset.id, f.path, 'proposed'),
  ]);
  try {
    await vscode.commands.executeCommand('vscode.changes', `Review: ${changeset.title}`, resources);
  } catch {
    for (const file of changeset.files) {
      await openFileDiff(changeset, file);
    }
  }
}
