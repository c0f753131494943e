/** The extension's settings read from VS Code (only values the user set count for the server). */

import * as vscode from 'vscode';
import type { JsonObject, UserSettings } from './logic/initOptions';
import type { LaunchSettings } from './logic/serverLaunch';

export const SECTION = 'agentic';

/**
 * The value the user set. In a folder VS Code does not trust, the folder's own
 * `.vscode/settings.json` (and the workspace file) came with the repository: only the user's
 * own settings count (these keys are `restrictedConfigurations` in package.json, but `inspect`
 * still reports the workspace values).
 */
function userValue<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const seen = config.inspect<T>(key);
  if (!seen) {
    return undefined;
  }
  if (!vscode.workspace.isTrusted) {
    return seen.globalValue;
  }
  return seen.workspaceFolderValue ?? seen.workspaceValue ?? seen.globalValue;
}

export function launchSettings(scope?: vscode.Uri): LaunchSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return {
    serverPath: config.get<string>('server.path', ''),
    pythonPath: config.get<string>('server.pythonPath', ''),
    extraArgs: config.get<string[]>('server.args', []),
    env: config.get<Record<string, string>>('server.env', {}),
  };
}

export function userSettings(scope?: vscode.Uri): UserSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return {
    ollamaHost: userValue<string>(config, 'llm.ollamaHost'),
    model: userValue<string>(config, 'llm.model'),
    provider: userValue<string>(config, 'llm.provider'),
    mcpHttpPort: userValue<number | null>(config, 'mcp.httpPort'),
    commitOnAccept: userValue<boolean>(config, 'changes.commitOnAccept'),
    logLevel: userValue<string>(config, 'server.logLevel'),
    extra: userValue<JsonObject>(config, 'server.settings'),
  };
}

/** The Python interpreter selected for the workspace (Python extension first), if any. */
export async function selectedInterpreter(scope?: vscode.Uri): Promise<string | undefined> {
  const python = vscode.extensions.getExtension('ms-python.python');
  if (python) {
    try {
      const api = python.isActive ? python.exports : await python.activate();
      const found = api?.environments?.getActiveEnvironmentPath?.(scope);
      if (found?.path) {
        return found.path as string;
      }
    } catch {
      // the Python extension is optional; fall back to its setting
    }
  }
  const configured = vscode.workspace.getConfiguration('python', scope).get<string>('defaultInterpreterPath');
  return configured && configured !== 'python' ? configured : undefined;
}

export type ActionKind = 'fix' | 'explain';

/** The workflow "Fix this" / "Explain this" runs (undefined: the orchestrator picks). */
export function actionWorkflow(kind: ActionKind, scope?: vscode.Uri): string | undefined {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const name = kind === 'fix' ? config.get<string>('actions.fixWorkflow', '') : config.get<string>('actions.explainWorkflow', 'explain');
  return name?.trim() || undefined;
}
