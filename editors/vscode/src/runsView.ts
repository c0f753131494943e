/**
 * The *Runs* view: the workspace's workflow runs as the server lists them (`agentic.listRuns`,
 * runs of earlier server processes included), each with its stages' states; and the read-only
 * `agentic-run:` documents that show a review gate's question and diff.
 */

import * as vscode from 'vscode';
import type { AgenticClient } from './client';
import { questionDocument, runView, stageRows, stageView, type ItemView, type StageRow } from './logic/runList';
import { ServerCommand, type ListRunsResult, type ReviewQuestion, type RunStatusJson } from './logic/protocol';
import { formatUserError } from './logic/serverErrors';

export const QUESTION_SCHEME = 'agentic-run';

export type RunNode = { type: 'run'; run: RunStatusJson; root: string } | { type: 'stage'; run: RunStatusJson; root: string; row: StageRow };

const LIST_LIMIT = 50;

/** The runs of every workspace folder, newest first, as the server last listed them. */
export class RunStore implements vscode.Disposable {
  private readonly changedEmitter = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changedEmitter.event;
  runs: { run: RunStatusJson; root: string }[] = [];
  lastError = '';
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private again = false;

  constructor(private readonly client: AgenticClient) {}

  /** Read the list again (calls while one is under way make one more read after it). */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = this.read().finally(() => {
      this.refreshing = undefined;
      if (this.again) {
        this.again = false;
        void this.refresh();
      }
    });
    return this.refreshing;
  }

  /** Refresh after a burst of run events has passed. */
  refreshSoon(delayMs = 250): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, delayMs);
  }

  private async read(): Promise<void> {
    if (!this.client.running) {
      this.runs = [];
      this.changedEmitter.fire();
      return;
    }
    const folders = vscode.workspace.workspaceFolders ?? [];
    const found: { run: RunStatusJson; root: string }[] = [];
    const errors: string[] = [];
    for (const folder of folders) {
      try {
        const result = await this.client.command<ListRunsResult>(ServerCommand.listRuns, {
          root: folder.uri.fsPath,
          limit: LIST_LIMIT,
        });
        found.push(...result.runs.map((run) => ({ run, root: folder.uri.fsPath })));
      } catch (error) {
        errors.push(formatUserError(error, `Listing the runs of ${folder.name}`));
      }
    }
    found.sort((a, b) => (b.run.started ?? 0) - (a.run.started ?? 0));
    this.runs = found;
    this.lastError = errors.join('; ');
    this.changedEmitter.fire();
  }

  find(runId: string): { run: RunStatusJson; root: string } | undefined {
    return this.runs.find((r) => r.run.runId === runId);
  }

  /** Put a status a steering command answered into the list at once. */
  remember(run: RunStatusJson, root: string): void {
    const at = this.runs.findIndex((r) => r.run.runId === run.runId);
    if (at >= 0) {
      this.runs[at] = { run, root };
    } else {
      this.runs.unshift({ run, root });
    }
    this.changedEmitter.fire();
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.changedEmitter.dispose();
  }
}

function treeItem(view: ItemView, collapsible: vscode.TreeItemCollapsibleState): vscode.TreeItem {
  const item = new vscode.TreeItem(view.label, collapsible);
  item.description = view.description;
  item.tooltip = view.tooltip;
  item.contextValue = view.contextValue;
  item.iconPath = new vscode.ThemeIcon(view.icon, view.color ? new vscode.ThemeColor(view.color) : undefined);
  return item;
}

export class RunsTree implements vscode.TreeDataProvider<RunNode> {
  private readonly changedEmitter = new vscode.EventEmitter<RunNode | undefined>();
  readonly onDidChangeTreeData = this.changedEmitter.event;

  constructor(private readonly store: RunStore) {
    store.onDidChange(() => this.changedEmitter.fire(undefined));
  }

  getTreeItem(node: RunNode): vscode.TreeItem {
    if (node.type === 'run') {
      const live = node.run.status === 'running' || node.run.status === 'waiting_input';
      const item = treeItem(
        runView(node.run),
        Object.keys(node.run.stages).length
          ? live
            ? vscode.TreeItemCollapsibleState.Expanded
            : vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.None,
      );
      // the id changes with the status, so a run that starts waiting shows expanded again
      item.id = `${node.run.runId}@${node.run.status}`;
      item.command = { command: 'agenticLsp.showRunGraph', title: 'Show Graph', arguments: [node] };
      return item;
    }
    const item = treeItem(stageView(node.row, node.run), vscode.TreeItemCollapsibleState.None);
    item.id = `${node.run.runId}@${node.run.status}/${node.row.stage}`;
    return item;
  }

  getChildren(node?: RunNode): RunNode[] {
    if (!node) {
      return this.store.runs.map(({ run, root }) => ({ type: 'run', run, root }));
    }
    if (node.type === 'run') {
      return stageRows(node.run).map((row) => ({ type: 'stage', run: node.run, root: node.root, row }));
    }
    return [];
  }
}

/** Read-only `agentic-run:` documents: a review gate's question and diff
 * (`/<runId>/<stage>-r<revision>.diff`) and a run's answer (`/<runId>/answer.md`). */
export class RunDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();

  private put(path: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: QUESTION_SCHEME, path });
    this.texts.set(uri.toString(), text);
    return uri;
  }

  question(run: { runId: string; task: string }, question: ReviewQuestion): vscode.Uri {
    return this.put(`/${run.runId}/${question.stage}-r${question.revisions}.diff`, questionDocument(run, question));
  }

  answer(run: { runId: string; task: string; answer: string }): vscode.Uri {
    return this.put(`/${run.runId}/answer.md`, `# ${run.task.split('\n')[0] || run.runId}\n\n${run.answer}\n`);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '# This document of a run is no longer known; open it from the run again.\n';
  }
}
