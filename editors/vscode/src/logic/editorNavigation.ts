/**
 * Lending VS Code's language features to agentic-lsp (`agentic/editorNavigation`, docs/lsp.md).
 *
 * The client advertises `capabilities.experimental.agentic.editorNavigation` (the methods
 * below); the server then asks for definitions, references, implementations or hover at a
 * position, and the extension answers with VS Code's providers (`vscode.execute*Provider`:
 * every extension's, the built-in TypeScript one, Pylance…). LocationLinks become their target
 * (`targetUri` + `targetSelectionRange`), hovers their markdown joined. Plain data only, so it
 * runs under node without VS Code: the provider call is injected.
 */

export const NAVIGATION_METHOD = 'agentic/editorNavigation';
export const SOURCE = 'vscode';

/** LSP method -> the VS Code command that runs every provider of it. */
export const PROVIDER_COMMANDS = {
  'textDocument/definition': 'vscode.executeDefinitionProvider',
  'textDocument/references': 'vscode.executeReferenceProvider',
  'textDocument/implementation': 'vscode.executeImplementationProvider',
  'textDocument/hover': 'vscode.executeHoverProvider',
} as const;

export type NavigationMethod = keyof typeof PROVIDER_COMMANDS;
export const NAVIGATION_METHODS = Object.keys(PROVIDER_COMMANDS) as NavigationMethod[];

export interface WirePosition {
  line: number;
  character: number;
}
export interface WireRange {
  start: WirePosition;
  end: WirePosition;
}
export interface WireLocation {
  uri: string;
  range: WireRange;
}
export interface NavigationRequest {
  method: string;
  textDocument: { uri: string };
  position: WirePosition;
  context?: Record<string, unknown>;
}
export type NavigationAnswer =
  | { source: string; locations: WireLocation[] }
  | { source: string; hover: string }
  | null;

/** Runs `command` for the document `uri` at `position` (VS Code: executeCommand). */
export type ExecuteProvider = (command: string, uri: string, position: WirePosition) => Promise<unknown>;

/** The client capability that lends navigation (merged into `experimental`). */
export function navigationCapability(): { agentic: { editorNavigation: NavigationMethod[] } } {
  return { agentic: { editorNavigation: [...NAVIGATION_METHODS] } };
}

function wireRange(value: unknown): WireRange | undefined {
  const range = value as { start?: WirePosition; end?: WirePosition } | undefined;
  if (!range?.start || !range.end) {
    return undefined;
  }
  const pos = (p: WirePosition): WirePosition => ({ line: p.line, character: p.character });
  return { start: pos(range.start), end: pos(range.end) };
}

/** Location | Location[] | LocationLink[] (VS Code objects or plain JSON) -> wire locations. */
export function toLocations(result: unknown): WireLocation[] {
  if (!result) {
    return [];
  }
  const items = Array.isArray(result) ? result : [result];
  const found: WireLocation[] = [];
  for (const item of items as Array<Record<string, unknown>>) {
    if (!item) {
      continue;
    }
    const link = item.targetUri !== undefined;
    const uri = link ? item.targetUri : item.uri;
    const range = wireRange(link ? (item.targetSelectionRange ?? item.targetRange) : item.range);
    if (uri !== undefined && range) {
      found.push({ uri: String(uri), range });
    }
  }
  return found;
}

/** Hover[] -> one markdown text (MarkdownString, MarkedString, `{language, value}`). */
export function hoverMarkdown(result: unknown): string {
  const parts: string[] = [];
  for (const hover of (Array.isArray(result) ? result : []) as Array<{ contents?: unknown[] }>) {
    for (const content of hover?.contents ?? []) {
      if (typeof content === 'string') {
        parts.push(content);
      } else if (content && typeof content === 'object') {
        const { value, language } = content as { value?: unknown; language?: unknown };
        if (typeof value === 'string') {
          parts.push(typeof language === 'string' ? '```' + language + '\n' + value + '\n```' : value);
        }
      }
    }
  }
  return parts.filter((part) => part.trim() !== '').join('\n\n---\n\n');
}

/** The answer to one `agentic/editorNavigation` request. */
export async function answerNavigation(request: NavigationRequest, execute: ExecuteProvider): Promise<NavigationAnswer> {
  const command = PROVIDER_COMMANDS[request.method as NavigationMethod];
  if (!command || !request.textDocument?.uri || !request.position) {
    throw new Error(`agentic/editorNavigation: cannot answer ${String(request.method)}`);
  }
  const result = await execute(command, request.textDocument.uri, request.position);
  if (request.method === 'textDocument/hover') {
    return { source: SOURCE, hover: hoverMarkdown(result) };
  }
  return { source: SOURCE, locations: toLocations(result) };
}
