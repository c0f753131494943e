/** Activation: the client, the views, the status bar and the commands, wired together. */

import * as vscode from 'vscode';
import type { Middleware } from 'vscode-languageclient/node';
import { ChangesetStore, ChangesetTree, ReviewDocuments } from './changesetViews';
import { AgenticClient, type ServerState } from './client';
import { Commands } from './commands';
import { EditorActions } from './editorActions';
import { GraphPanel } from './graphPanel';
import { REVIEW_SCHEME } from './logic/changesetModel';
import { IndexStates } from './logic/indexState';
import { ServerCommand, type AgenticEvent, type IndexStatusResult } from './logic/protocol';
import { RUN_LIST_EVENTS } from './logic/runList';
import { RunTracker } from './logic/runTracker';
import { ReviewCommands } from './reviewCommands';
import { QUESTION_SCHEME, RunDocuments, RunStore, RunsTree } from './runsView';
import { SECTION } from './settings';

const CHANGESET_EVENTS = new Set([
  'changeset_proposed',
  'changeset_updated',
  'changesets_changed',
  'changeset_ready',
  'run_finished',
]);

export interface AgenticApi {
  client: AgenticClient;
  tracker: RunTracker;
  store: ChangesetStore;
  runs: RunStore;
  commands: Commands;
  indexStates: IndexStates;
}

let active: AgenticClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<AgenticApi> {
  const output = vscode.window.createOutputChannel('Agentic LSP');
  const runLog = vscode.window.createOutputChannel('Agentic Runs');
  const tracker = new RunTracker();
  const indexStates = new IndexStates();
  let review: ReviewCommands | undefined;
  const middleware: Middleware = {
    executeCommand: (command, args, next) =>
      review ? review.serverCommand(command, args, async (c, a) => next(c, a)) : next(command, args),
  };
  const client = new AgenticClient(output, middleware);
  active = client;
  const store = new ChangesetStore(client);
  const reviewDocs = new ReviewDocuments(store);
  const graph = new GraphPanel(tracker);
  review = new ReviewCommands(client, store, reviewDocs);
  const runs = new RunStore(client);
  const runDocs = new RunDocuments();
  const commands = new Commands(client, store, tracker, graph, runLog, review, runs, runDocs);
  commands.register(context);

  const tree = vscode.window.createTreeView('agenticPendingChanges', {
    treeDataProvider: new ChangesetTree(store),
    showCollapseAll: true,
  });
  const runsTree = vscode.window.createTreeView('agenticRuns', { treeDataProvider: new RunsTree(runs) });
  runs.onDidChange(() => {
    const waiting = runs.runs.filter((r) => r.run.status === 'waiting_input').length;
    runsTree.badge = waiting ? { value: waiting, tooltip: `${waiting} run(s) wait for your review` } : undefined;
  });
  const status = vscode.window.createStatusBarItem('agentic.index', vscode.StatusBarAlignment.Left, 10);
  status.name = 'Agentic index';
  status.command = 'agenticLsp.showIndexStatus';
  const showStatus = () => {
    const view = indexStates.view();
    status.text = view.text;
    status.tooltip = view.tooltip;
    status.backgroundColor =
      view.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    status.show();
  };
  showStatus();

  let refreshTimer: NodeJS.Timeout | undefined;
  const refreshSoon = () => {
    if (refreshTimer) {
      clearTimeout(refreshTimer);
    }
    refreshTimer = setTimeout(() => {
      void store.refresh().then(() => reviewDocs.refreshOpen());
    }, 200);
  };
  store.onDidChange(() => {
    tree.badge = store.pending.length
      ? { value: store.pending.length, tooltip: `${store.pending.length} pending changeset(s)` }
      : undefined;
    void vscode.commands.executeCommand('setContext', 'agentic.hasPendingChanges', store.pending.length > 0);
  });

  context.subscriptions.push(
    output,
    runLog,
    client,
    store,
    graph,
    tree,
    runs,
    runsTree,
    status,
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, reviewDocs),
    vscode.workspace.registerTextDocumentContentProvider(QUESTION_SCHEME, runDocs),
    vscode.languages.registerCodeActionsProvider({ scheme: 'file' }, commands.actions, EditorActions.metadata),
    client.onEvent((event: AgenticEvent) => {
      tracker.handle(event);
      commands.steering.onEvent(event);
      if (event.runId && RUN_LIST_EVENTS.has(event.kind)) {
        runs.refreshSoon();
      }
      if (indexStates.fromEvent(event)) {
        showStatus();
      }
      if (CHANGESET_EVENTS.has(event.kind)) {
        refreshSoon();
      }
    }),
    client.onState(async (state: ServerState) => {
      indexStates.serverState = state;
      if (state !== 'running') {
        indexStates.clear();
      }
      showStatus();
      if (state === 'running') {
        try {
          const result = await client.command<IndexStatusResult>(ServerCommand.indexStatus, {});
          result.roots.forEach((root) => indexStates.fromStatus(root));
          showStatus();
        } catch (error) {
          output.appendLine(`index status: ${String(error)}`);
        }
      }
      void store.refresh();
      void runs.refresh();
    }),
    vscode.workspace.onDidChangeConfiguration(async (change) => {
      if (change.affectsConfiguration(SECTION)) {
        const choice = await vscode.window.showInformationMessage(
          'Agentic settings changed; restart the server to apply them?',
          'Restart',
        );
        if (choice === 'Restart') {
          await client.restart();
        }
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      // the server reads the folder's own settings file in full once it is trusted
      if (client.running) {
        await client.restart();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(async () => {
      if (!client.running && client.state !== 'starting') {
        await client.start();
      }
    }),
  );

  void client.start();
  return { client, tracker, store, runs, commands, indexStates };
}

export async function deactivate(): Promise<void> {
  await active?.stop();
  active = undefined;
}
