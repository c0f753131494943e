/**
 * Which process to start as the agentic-lsp server for a workspace, and what to tell the user
 * when there is none.
 *
 * Order (first that exists wins):
 * 1. `agentic.server.path` — an `agentic-lsp` executable (an error if set but missing);
 * 2. `agentic.server.pythonPath` — `<python> -m agentic_lsp serve` (an error if set but missing);
 * 3. the workspace's own virtual environment (`.venv`, `venv`, `env`) with `agentic-lsp` in it;
 * 4. the Python interpreter selected for the workspace (Python extension or
 *    `python.defaultInterpreterPath`) when agentic-lsp is installed next to it or importable;
 * 5. `agentic-lsp` on `PATH`.
 */

import * as path from 'path';

export interface LaunchSettings {
  serverPath: string;
  pythonPath: string;
  extraArgs: string[];
  env: Record<string, string>;
}

/** The file system questions resolution asks; real implementations live in `probe.ts`. */
export interface Probe {
  platform: NodeJS.Platform;
  isExecutable(file: string): boolean;
  /** The first `name` found on `PATH`, or undefined. */
  which(name: string): string | undefined;
  /** True when `python -c "import agentic_lsp"` succeeds. */
  canImport(python: string): boolean;
}

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the choice came from, for the output channel. */
  source: string;
}

export class LaunchError extends Error {
  constructor(
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

const VENV_DIRS = ['.venv', 'venv', 'env'];

function binDir(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'Scripts' : 'bin';
}

function exe(name: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? `${name}.exe` : name;
}

/** `~`, `${workspaceFolder}` and relative paths (to the workspace) made absolute. */
export function expandPath(value: string, workspace: string | undefined, home: string): string {
  let out = value.trim();
  if (workspace) {
    out = out.split('${workspaceFolder}').join(workspace);
  }
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(home, out.slice(1));
  }
  if (!path.isAbsolute(out) && workspace && (out.includes('/') || out.includes('\\'))) {
    out = path.resolve(workspace, out);
  }
  return out;
}

export function resolveLaunch(
  settings: LaunchSettings,
  workspace: string | undefined,
  interpreter: string | undefined,
  probe: Probe,
  home: string,
): Launch {
  const serveArgs = ['serve', ...settings.extraArgs];
  const env = { ...settings.env };
  const bin = binDir(probe.platform);
  const agenticExe = exe('agentic-lsp', probe.platform);

  if (settings.serverPath.trim()) {
    const command = findCommand(expandPath(settings.serverPath, workspace, home), probe);
    if (!command) {
      throw new LaunchError(
        `agentic.server.path is set to "${settings.serverPath}", which is not an executable file.`,
        'Fix or clear the agentic.server.path setting (clear it to let the extension find agentic-lsp).',
      );
    }
    return { command, args: serveArgs, env, source: 'setting agentic.server.path' };
  }

  if (settings.pythonPath.trim()) {
    const python = findCommand(expandPath(settings.pythonPath, workspace, home), probe);
    if (!python) {
      throw new LaunchError(
        `agentic.server.pythonPath is set to "${settings.pythonPath}", which is not an executable file.`,
        'Fix or clear the agentic.server.pythonPath setting.',
      );
    }
    return {
      command: python,
      args: ['-m', 'agentic_lsp', ...serveArgs],
      env,
      source: 'setting agentic.server.pythonPath',
    };
  }

  if (workspace) {
    for (const dir of VENV_DIRS) {
      const candidate = path.join(workspace, dir, bin, agenticExe);
      if (probe.isExecutable(candidate)) {
        return { command: candidate, args: serveArgs, env, source: `workspace ${dir}` };
      }
    }
  }

  if (interpreter) {
    const python = expandPath(interpreter, workspace, home);
    const beside = path.join(path.dirname(python), agenticExe);
    if (path.isAbsolute(python) && probe.isExecutable(beside)) {
      return { command: beside, args: serveArgs, env, source: `next to interpreter ${python}` };
    }
    const resolved = findCommand(python, probe);
    if (resolved && probe.canImport(resolved)) {
      return {
        command: resolved,
        args: ['-m', 'agentic_lsp', ...serveArgs],
        env,
        source: `selected interpreter ${resolved}`,
      };
    }
  }

  const onPath = probe.which(agenticExe);
  if (onPath) {
    return { command: onPath, args: serveArgs, env, source: 'PATH' };
  }

  throw new LaunchError(
    'The agentic-lsp server was not found (no agentic.server.path, no agentic-lsp in the ' +
      "workspace's virtual environment or the selected Python interpreter, none on PATH).",
    'Install it from a checkout of agentic-lsp (it is on no package index): `make install`, or ' +
      '`make dist` and `uv tool install dist/agentic_lsp-*.whl` (its README has the CPU-torch ' +
      'flags); then run `agentic-lsp setup vscode`, or set agentic.server.path to the ' +
      'agentic-lsp executable.',
  );
}

function findCommand(value: string, probe: Probe): string | undefined {
  if (path.isAbsolute(value)) {
    return probe.isExecutable(value) ? value : undefined;
  }
  return probe.which(value);
}

/** A shell-like rendering of the command line, for the output channel and error messages. */
export function describeLaunch(launch: Launch): string {
  const quote = (part: string) => (/^[\w@%+=:,./-]+$/.test(part) ? part : JSON.stringify(part));
  return [launch.command, ...launch.args].map(quote).join(' ');
}
