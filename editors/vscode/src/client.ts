/**
 * The language client: starts `agentic-lsp serve` for the workspace, restarts it, forwards
 * `agentic/event` notifications, and runs server commands with errors made readable.
 */

import * as os from 'os';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type ErrorHandler,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import {
  answerNavigation,
  NAVIGATION_METHOD,
  navigationCapability,
  type NavigationRequest,
  type WirePosition,
} from './logic/editorNavigation';
import { buildInitializationOptions, SettingsError } from './logic/initOptions';
import { realProbe } from './logic/probe';
import { EVENT_METHOD, type AgenticEvent } from './logic/protocol';
import { describeLaunch, LaunchError, resolveLaunch, type Launch } from './logic/serverLaunch';
import { formatUserError } from './logic/serverErrors';
import { launchSettings, selectedInterpreter, userSettings } from './settings';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

const MAX_RESTARTS = 3;

/** Advertises `experimental.agentic.editorNavigation` (docs/lsp.md) in `initialize`. */
const lendNavigation: StaticFeature = {
  fillClientCapabilities: (capabilities) => {
    capabilities.experimental = { ...(capabilities.experimental ?? {}), ...navigationCapability() };
  },
  initialize: () => undefined,
  getState: () => ({ kind: 'static' }),
  clear: () => undefined,
};

/** Runs every provider VS Code has for the document (agentic-lsp's own one answers empty then). */
async function executeProvider(command: string, uri: string, position: WirePosition): Promise<unknown> {
  const document = vscode.Uri.parse(uri);
  await vscode.workspace.openTextDocument(document); // loaded, not shown: providers need the model
  return vscode.commands.executeCommand(command, document, new vscode.Position(position.line, position.character));
}

export class AgenticClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly eventEmitter = new vscode.EventEmitter<AgenticEvent>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onEvent = this.eventEmitter.event;
  readonly onState = this.stateEmitter.event;
  state: ServerState = 'stopped';
  launch: Launch | undefined;
  private restarts = 0;

  constructor(
    readonly output: vscode.OutputChannel,
    private readonly middleware: Middleware,
  ) {}

  get running(): boolean {
    return this.client !== undefined && this.client.state === State.Running;
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.stateEmitter.fire(state);
  }

  async start(): Promise<boolean> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      this.output.appendLine('agentic-lsp needs an open folder; waiting for one.');
      this.setState('stopped');
      return false;
    }
    this.setState('starting');
    let initializationOptions: Record<string, unknown>;
    try {
      const interpreter = await selectedInterpreter(folder.uri);
      this.launch = resolveLaunch(launchSettings(folder.uri), folder.uri.fsPath, interpreter, realProbe, os.homedir());
      initializationOptions = buildInitializationOptions({
        ...userSettings(folder.uri),
        workspaceTrusted: vscode.workspace.isTrusted,
      });
    } catch (error) {
      this.setState('failed');
      if (error instanceof LaunchError) {
        this.output.appendLine(`${error.message}\nFix: ${error.fix}`);
        void this.offerFix(`${error.message} ${error.fix}`);
      } else if (error instanceof SettingsError) {
        this.output.appendLine(error.message);
        void this.offerFix(`${error.message}.`);
      } else {
        throw error;
      }
      return false;
    }
    const launch = this.launch;
    this.output.appendLine(`Starting ${describeLaunch(launch)} (found via ${launch.source})`);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { cwd: folder.uri.fsPath, env: { ...process.env, ...launch.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions,
      middleware: this.middleware,
      errorHandler: this.errorHandler(),
      initializationFailedHandler: (error) => {
        this.output.appendLine(`agentic-lsp refused to initialize: ${formatUserError(error)}`);
        return false;
      },
    };
    const client = new LanguageClient('agentic', 'Agentic LSP', serverOptions, clientOptions);
    client.onDidChangeState((change) => {
      if (change.newState === State.Running) {
        this.setState('running');
      } else if (change.newState === State.Stopped && this.state !== 'failed') {
        this.setState('stopped');
      }
    });
    client.onNotification(EVENT_METHOD, (event: AgenticEvent) => this.eventEmitter.fire(event));
    // Lend VS Code's providers to agentic-lsp: agents and MCP clients get their answers.
    client.registerFeature(lendNavigation);
    client.onRequest(NAVIGATION_METHOD, (request: NavigationRequest) => answerNavigation(request, executeProvider));
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.setState('failed');
      const detail = formatUserError(error);
      this.output.appendLine(`agentic-lsp failed to start: ${detail}`);
      void this.offerFix(
        `agentic-lsp failed to start (${describeLaunch(launch)}): ${detail}. The output channel has the server's log.`,
      );
      return false;
    }
    this.restarts = 0;
    return true;
  }

  private errorHandler(): ErrorHandler {
    return {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        this.restarts += 1;
        if (this.restarts <= MAX_RESTARTS) {
          this.output.appendLine(`agentic-lsp exited; restarting (${this.restarts}/${MAX_RESTARTS}).`);
          return { action: CloseAction.Restart, handled: true };
        }
        this.setState('failed');
        void this.offerFix(
          `agentic-lsp exited ${MAX_RESTARTS + 1} times and was not restarted again. ` +
            'Check the output channel for its log, then run "Agentic: Restart Server".',
        );
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private async offerFix(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'agentic.server');
    } else if (choice === 'Show Output') {
      this.output.show(true);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.appendLine(`stopping agentic-lsp: ${formatUserError(error)}`);
      }
    }
    this.setState('stopped');
  }

  async restart(): Promise<boolean> {
    this.output.appendLine('Restarting agentic-lsp…');
    await this.stop();
    this.restarts = 0;
    return this.start();
  }

  /** Run a server command (`workspace/executeCommand`) with its one object argument. */
  async command<T>(command: string, argument: object, token?: vscode.CancellationToken): Promise<T> {
    const client = this.client;
    if (!client || !this.running) {
      throw new Error('the agentic-lsp server is not running — run "Agentic: Restart Server" (the output channel says why)');
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] }, token) as Promise<T>;
  }

  dispose(): void {
    void this.stop();
    this.eventEmitter.dispose();
    this.stateEmitter.dispose();
  }
}
