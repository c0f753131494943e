/** "Agentic: Fix this" and "Agentic: Explain this" in the lightbulb, their palette commands, and
 * the editor context every run started from the editor carries (the document, the selection,
 * the cursor and the diagnostics there; the server reads the code itself). */

import * as vscode from 'vscode';
import {
  buildEditorContext,
  explainTask,
  fixPlace,
  fixTask,
  isEmptyRange,
  isOwnDiagnostic,
  plainRange,
  unionRange,
  type EditorPlace,
} from './logic/editorContext';
import type { EditorContextArg } from './logic/protocol';
import type { ActionKind } from './settings';
import { actionWorkflow } from './settings';


/** The argument the code actions hand their command. */
export interface ActionRequest {
  kind: ActionKind;
  task: string;
  context: EditorContextArg;
  /** The document's path as the user knows it (for titles and the log). */
  label: string;
}

/** A code action's request; a menu passes the document's URI instead, the palette nothing. */
export function isActionRequest(value: unknown): value is ActionRequest {
  const v = value as Partial<ActionRequest> | undefined;
  return Boolean(v && typeof v === 'object' && typeof v.task === 'string' && v.context && typeof v.context.uri === 'string');
}

export interface RunStarter {
  runFromEditor(request: ActionRequest, workflow: string | undefined): Promise<unknown>;
}

export const FIX_KIND = vscode.CodeActionKind.QuickFix.append('agentic');
export const EXPLAIN_KIND = vscode.CodeActionKind.RefactorRewrite.append('agentic');

/** Where the user is in `editor` (a `file:` document of a workspace folder), or undefined. */
export function editorPlace(editor: vscode.TextEditor | undefined, range?: vscode.Range): EditorPlace | undefined {
  if (!editor) {
    return undefined;
  }
  return documentPlace(editor.document, range ?? editor.selection, editor.selection.active);
}

function documentPlace(doc: vscode.TextDocument, range: vscode.Range, cursor: vscode.Position): EditorPlace | undefined {
  if (doc.uri.scheme !== 'file' || !vscode.workspace.getWorkspaceFolder(doc.uri)) {
    return undefined;
  }
  return {
    uri: doc.uri.toString(),
    selection: plainRange(range),
    cursor: { line: cursor.line, character: cursor.character },
    diagnostics: vscode.languages.getDiagnostics(doc.uri),
  };
}

function label(uri: string): string {
  return vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
}

/** `place.diagnostics`: all the document's (the palette: those where the user is are fixed) or
 * the ones VS Code asks code actions for (the lightbulb: exactly those). */
export function fixRequest(place: EditorPlace): ActionRequest {
  const context = buildEditorContext(fixPlace(place));
  return { kind: 'fix', task: fixTask(context.diagnostics ?? []), context, label: label(place.uri) };
}

export function explainRequest(place: EditorPlace): ActionRequest {
  const context = buildEditorContext(place);
  return { kind: 'explain', task: explainTask(context), context, label: label(place.uri) };
}

export class EditorActions implements vscode.CodeActionProvider {
  static readonly metadata: vscode.CodeActionProviderMetadata = { providedCodeActionKinds: [FIX_KIND, EXPLAIN_KIND] };

  constructor(private readonly starter: RunStarter) {}

  provideCodeActions(
    doc: vscode.TextDocument,
    range: vscode.Range | vscode.Selection,
    context: vscode.CodeActionContext,
  ): vscode.CodeAction[] {
    const editor = vscode.window.activeTextEditor;
    const cursor = editor?.document === doc ? editor.selection.active : range.start;
    const place = documentPlace(doc, range, cursor);
    if (!place) {
      return [];
    }
    const wanted = (kind: vscode.CodeActionKind) => !context.only || context.only.contains(kind) || kind.contains(context.only);
    const actions: vscode.CodeAction[] = [];
    const problems = context.diagnostics.filter((d) => !isOwnDiagnostic(d));
    if (problems.length && wanted(FIX_KIND)) {
      // the lines of the diagnostics VS Code asks about lead the context, whatever the cursor
      const selection = isEmptyRange(range) ? unionRange(problems.map((d) => d.range)) : place.selection;
      const request = fixRequest({ ...place, selection, diagnostics: problems });
      const action = new vscode.CodeAction('Agentic: Fix this', FIX_KIND);
      action.diagnostics = problems;
      action.command = { command: 'agenticLsp.fixSelection', title: 'Agentic: Fix this', arguments: [request] };
      actions.push(action);
    }
    if (!isEmptyRange(range) && wanted(EXPLAIN_KIND)) {
      const action = new vscode.CodeAction('Agentic: Explain this', EXPLAIN_KIND);
      action.command = { command: 'agenticLsp.explainSelection', title: 'Agentic: Explain this', arguments: [explainRequest(place)] };
      actions.push(action);
    }
    return actions;
  }

  /** "Fix this": from the lightbulb (its request) or the palette (the active editor). */
  async fix(request?: unknown): Promise<unknown> {
    let asked = isActionRequest(request) ? request : undefined;
    if (!asked) {
      const place = editorPlace(vscode.window.activeTextEditor);
      if (!place) {
        void vscode.window.showInformationMessage('Open a file of the workspace and select the code to fix.');
        return undefined;
      }
      asked = fixRequest(place);
      if (!asked.context.diagnostics?.length) {
        const task = await vscode.window.showInputBox({
          title: 'Agentic: Fix this',
          prompt: 'No diagnostic is reported here: what is wrong?',
          value: asked.task,
          ignoreFocusOut: true,
          validateInput: (value) => (value.trim() ? undefined : 'Describe the problem'),
        });
        if (!task) {
          return undefined;
        }
        asked = { ...asked, task: task.trim() };
      }
    }
    return this.starter.runFromEditor(asked, actionWorkflow('fix', vscode.Uri.parse(asked.context.uri)));
  }

  /** "Explain this": the selection (or the code around the cursor). */
  async explain(request?: unknown): Promise<unknown> {
    let asked = isActionRequest(request) ? request : undefined;
    if (!asked) {
      const place = editorPlace(vscode.window.activeTextEditor);
      if (!place) {
        void vscode.window.showInformationMessage('Open a file of the workspace and select the code to explain.');
        return undefined;
      }
      asked = explainRequest(place);
    }
    return this.starter.runFromEditor(asked, actionWorkflow('explain', vscode.Uri.parse(asked.context.uri)));
  }
}
