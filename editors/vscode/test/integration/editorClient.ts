/**
 * A small editor over the LSP protocol layer the extension's client is built on
 * (vscode-languageserver-protocol's node API), driving the real `agentic-lsp serve` process:
 * it keeps open documents, answers `workspace/applyEdit` the way VS Code applies a confirmed
 * refactor preview, accepts progress tokens, and records events, diagnostics and progress.
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import {
  ApplyWorkspaceEditRequest,
  createProtocolConnection,
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  PublishDiagnosticsNotification,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
  type ApplyWorkspaceEditParams,
  type ApplyWorkspaceEditResult,
  type Diagnostic,
  type InitializeResult,
  type ProtocolConnection,
  type TextEdit,
} from 'vscode-languageserver-protocol/node';
import type { Launch } from '../../src/logic/serverLaunch';
import { EVENT_METHOD, type AgenticEvent } from '../../src/logic/protocol';

export const TIMEOUT_MS = 90_000;

export function fileUri(file: string): string {
  return pathToFileURL(file).toString();
}

interface OpenDoc {
  text: string;
  version: number;
}

export class EditorClient {
  readonly events: AgenticEvent[] = [];
  readonly edits: ApplyWorkspaceEditParams[] = [];
  readonly progress: { token: string | number; value: any }[] = [];
  readonly progressTokens: (string | number)[] = [];
  readonly diagnostics = new Map<string, Diagnostic[]>();
  readonly docs = new Map<string, OpenDoc>();
  readonly stderr: string[] = [];
  private eventListeners: ((event: AgenticEvent) => void)[] = [];
  capabilities: InitializeResult['capabilities'] | undefined;
  exitCode: Promise<number | null>;

  private constructor(
    readonly process: ChildProcessWithoutNullStreams,
    readonly connection: ProtocolConnection,
  ) {
    this.exitCode = new Promise((resolve) => process.on('exit', (code) => resolve(code)));
  }

  static start(launch: Launch, cwd: string, env: NodeJS.ProcessEnv): EditorClient {
    const child = spawn(launch.command, launch.args, { cwd, env: { ...env, ...launch.env } });
    const connection = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const editor = new EditorClient(child, connection);
    child.stderr.on('data', (chunk: Buffer) => editor.stderr.push(chunk.toString()));
    connection.onNotification(EVENT_METHOD, (event: AgenticEvent) => {
      editor.events.push(event);
      editor.eventListeners.forEach((listener) => listener(event));
    });
    connection.onNotification(PublishDiagnosticsNotification.type, (params) => editor.diagnostics.set(params.uri, params.diagnostics));
    connection.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
      editor.progressTokens.push(params.token);
      connection.onProgress(WorkDoneProgress.type, params.token, (value) => editor.progress.push({ token: params.token, value }));
      return null;
    });
    connection.onRequest(ApplyWorkspaceEditRequest.type, (params) => editor.applyEdit(params));
    connection.listen();
    return editor;
  }

  onEvent(listener: (event: AgenticEvent) => void): void {
    this.eventListeners.push(listener);
  }

  async initialize(root: string, initializationOptions: object, experimental?: object): Promise<InitializeResult> {
    const result = await this.connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: fileUri(root),
      workspaceFolders: [{ uri: fileUri(root), name: path.basename(root) }],
      initializationOptions,
      capabilities: {
        workspace: {
          applyEdit: true,
          workspaceEdit: {
            documentChanges: true,
            resourceOperations: ['create', 'rename', 'delete'],
            failureHandling: 'textOnlyTransactional',
            changeAnnotationSupport: { groupsOnLabel: true },
          },
          executeCommand: { dynamicRegistration: true },
          workspaceFolders: true,
        },
        textDocument: {
          synchronization: { didSave: true, dynamicRegistration: true },
          publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true, dataSupport: true },
          codeAction: {
            dataSupport: true,
            isPreferredSupport: true,
            codeActionLiteralSupport: { codeActionKind: { valueSet: ['', 'quickfix', 'refactor', 'source'] } },
          },
        },
        window: { workDoneProgress: true, showMessage: {} },
        experimental,
      },
    });
    this.capabilities = result.capabilities;
    await this.connection.sendNotification(InitializedNotification.type, {});
    return result;
  }

  command<T>(command: string, argument: object): Promise<T> {
    return this.connection.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] }) as Promise<T>;
  }

  async waitFor<T>(what: string, condition: () => T | undefined | null | false, timeoutMs = TIMEOUT_MS): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = condition();
      if (value) {
        return value;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; server stderr tail:\n${this.stderr.join('').slice(-3000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  waitEvent(kind: string, predicate: (event: AgenticEvent) => boolean = () => true, after = 0): Promise<AgenticEvent> {
    return this.waitFor(`event ${kind}`, () => this.events.slice(after).find((e) => e.kind === kind && predicate(e)));
  }

  // -- documents --------------------------------------------------------------------------------

  open(file: string, languageId = 'python'): string {
    const uri = fileUri(file);
    const text = fs.readFileSync(file, 'utf8');
    this.docs.set(uri, { text, version: 1 });
    void this.connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId, version: 1, text },
    });
    return uri;
  }

  buffer(file: string): string | undefined {
    return this.docs.get(fileUri(file))?.text;
  }

  /** Replace an open buffer's text (unsaved), as typing would. */
  type(file: string, text: string): void {
    this.setText(fileUri(file), text);
  }

  private setText(uri: string, text: string): void {
    const doc = this.docs.get(uri)!;
    doc.text = text;
    doc.version += 1;
    void this.connection.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version: doc.version },
      contentChanges: [{ text }],
    });
  }

  /** What VS Code does after the refactor preview is confirmed: versions checked, then applied. */
  private applyEdit(params: ApplyWorkspaceEditParams): ApplyWorkspaceEditResult {
    this.edits.push(params);
    const changes = params.edit.documentChanges ?? [];
    for (const change of changes) {
      if ('textDocument' in change && change.textDocument.version !== null) {
        const doc = this.docs.get(change.textDocument.uri);
        if (!doc || doc.version !== change.textDocument.version) {
          return { applied: false, failureReason: `version of ${change.textDocument.uri} moved on` };
        }
      }
    }
    for (const change of changes) {
      if ('textDocument' in change) {
        const uri = change.textDocument.uri;
        if (!this.docs.has(uri)) {
          this.docs.set(uri, { text: fs.existsSync(fileURLToPath(uri)) ? fs.readFileSync(fileURLToPath(uri), 'utf8') : '', version: 0 });
        }
        this.setText(uri, applyTextEdits(this.docs.get(uri)!.text, change.edits));
      } else if (change.kind === 'create') {
        fs.mkdirSync(path.dirname(fileURLToPath(change.uri)), { recursive: true });
        fs.writeFileSync(fileURLToPath(change.uri), '');
      } else if (change.kind === 'delete') {
        fs.rmSync(fileURLToPath(change.uri));
      } else if (change.kind === 'rename') {
        fs.renameSync(fileURLToPath(change.oldUri), fileURLToPath(change.newUri));
      }
    }
    return { applied: true };
  }

  async stop(): Promise<number | null> {
    await this.connection.sendRequest(ShutdownRequest.type);
    await this.connection.sendNotification(ExitNotification.type);
    const code = await this.exitCode;
    this.connection.dispose();
    return code;
  }

  kill(): void {
    if (this.process.exitCode === null) {
      this.process.kill();
    }
  }
}

function offsetAt(text: string, line: number, character: number): number {
  const lines = text.split('\n');
  if (line >= lines.length) {
    return text.length;
  }
  let offset = 0;
  for (let i = 0; i < line; i++) {
    offset += lines[i].length + 1;
  }
  return offset + Math.min(character, lines[line].length);
}

export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  let out = text;
  for (const edit of sorted.reverse()) {
    const start = offsetAt(out, edit.range.start.line, edit.range.start.character);
    const end = offsetAt(out, edit.range.end.line, edit.range.end.character);
    out = out.slice(0, start) + edit.newText + out.slice(end);
  }
  return out;
}
