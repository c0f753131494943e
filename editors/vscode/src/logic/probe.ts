/** The real file system and process answers for {@link resolveLaunch}. */

import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import type { Probe } from './serverLaunch';

export function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (process.platform !== 'win32') {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

export function which(name: string, envPath = process.env.PATH ?? ''): string | undefined {
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

export function canImport(python: string, timeoutMs = 15000): boolean {
  const result = spawnSync(python, ['-c', 'import agentic_lsp'], {
    timeout: timeoutMs,
    stdio: 'ignore',
  });
  return result.status === 0;
}

export const realProbe: Probe = {
  platform: process.platform,
  isExecutable,
  which: (name) => which(name),
  canImport: (python) => canImport(python),
};
