/**
 * The extension's settings → the server's `initializationOptions` (the shape of the server's
 * settings: `{"llm": {"model": …}, "changes": {…}}`, see docs/configuration.md).
 *
 * Only settings the user actually set are sent: initializationOptions win over the workspace's
 * `.agentic-lsp.toml`, so a default here must not silently override the project's own file.
 *
 * `trustWorkspace: true` is sent when VS Code's Workspace Trust trusts the folder: the server
 * then lets the folder's own settings file set user-only keys (model host, cache dir, redaction,
 * MCP origins, …). Otherwise nothing is sent and the server's own trust store decides.
 */

export type JsonObject = { [key: string]: unknown };

/** Values the user set (undefined: not set anywhere, leave it to the server's layers). */
export interface UserSettings {
  ollamaHost?: string;
  model?: string;
  provider?: string;
  mcpHttpPort?: number | null;
  commitOnAccept?: boolean;
  logLevel?: string;
  cacheDir?: string;
  /** `vscode.workspace.isTrusted`: the user trusts the folder in VS Code. */
  workspaceTrusted?: boolean;
  /** `agentic.server.settings`: any further server settings, in the server's shape. */
  extra?: JsonObject;
}

export class SettingsError extends Error {}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `b` merged into a copy of `a`, key by key (objects recursively; `b` wins). */
export function deepMerge(a: JsonObject, b: JsonObject): JsonObject {
  const out: JsonObject = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const current = out[key];
    out[key] = isObject(current) && isObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

/** Ollama accepts `host:port` without a scheme; the server wants a URL. */
export function normaliseOllamaHost(host: string): string {
  let out = host.trim();
  if (!out.includes('://')) {
    out = `http://${out}`;
  }
  return out.replace(/\/+$/, '');
}

export function buildInitializationOptions(user: UserSettings): JsonObject {
  const own: JsonObject = {};
  const section = (name: string): JsonObject => {
    const existing = own[name];
    if (isObject(existing)) {
      return existing;
    }
    const made: JsonObject = {};
    own[name] = made;
    return made;
  };
  if (user.ollamaHost && user.ollamaHost.trim()) {
    section('llm').ollama_host = normaliseOllamaHost(user.ollamaHost);
  }
  if (user.model && user.model.trim()) {
    section('llm').model = user.model.trim();
  }
  if (user.provider && user.provider.trim()) {
    section('llm').provider = user.provider.trim();
  }
  if (user.mcpHttpPort !== undefined && user.mcpHttpPort !== null) {
    const port = user.mcpHttpPort;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new SettingsError(`agentic.mcp.httpPort must be a port number 0-65535, not ${port}`);
    }
    section('mcp').http_port = port;
  }
  if (user.commitOnAccept !== undefined) {
    section('changes').commit_on_accept = user.commitOnAccept;
  }
  if (user.logLevel && user.logLevel.trim()) {
    own.log_level = user.logLevel.trim().toUpperCase();
  }
  if (user.cacheDir && user.cacheDir.trim()) {
    own.cache_dir = user.cacheDir.trim();
  }
  if (user.workspaceTrusted === true) {
    own.trustWorkspace = true;
  }
  if (user.extra !== undefined && !isObject(user.extra)) {
    throw new SettingsError('agentic.server.settings must be an object of server settings');
  }
  return deepMerge(user.extra ?? {}, own);
}
