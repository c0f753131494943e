import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { canImport, isExecutable, which } from '../../src/logic/probe';
import { describeLaunch, expandPath, LaunchError, resolveLaunch, type LaunchSettings, type Probe } from '../../src/logic/serverLaunch';

const REPO = path.resolve(__dirname, '../../../../..');
const VENV_PYTHON = path.join(REPO, '.venv', 'bin', 'python');

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'agentic-launch-'));
}

function script(file: string, executable = true): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '#!/bin/sh\nexit 0\n');
  fs.chmodSync(file, executable ? 0o755 : 0o644);
  return file;
}

function probe(pathDirs: string[], importable: Set<string> = new Set()): Probe {
  return {
    platform: 'linux',
    isExecutable,
    which: (name) => which(name, pathDirs.join(path.delimiter)),
    canImport: (python) => importable.has(python),
  };
}

const none: LaunchSettings = { serverPath: '', pythonPath: '', extraArgs: [], env: {} };

test('the configured server path wins and gets serve plus the extra arguments', () => {
  const dir = tmp();
  const exe = script(path.join(dir, 'bin', 'agentic-lsp'));
  script(path.join(dir, 'ws', '.venv', 'bin', 'agentic-lsp'));
  const launch = resolveLaunch({ ...none, serverPath: exe, extraArgs: ['--log-level', 'DEBUG'], env: { A: '1' } }, path.join(dir, 'ws'), undefined, probe([]), '/home/u');
  assert.equal(launch.command, exe);
  assert.deepEqual(launch.args, ['serve', '--log-level', 'DEBUG']);
  assert.deepEqual(launch.env, { A: '1' });
  assert.equal(launch.source, 'setting agentic.server.path');
});

test('a configured path that is not executable is an error that says how to fix it', () => {
  const dir = tmp();
  const notExe = script(path.join(dir, 'agentic-lsp'), false);
  for (const serverPath of [notExe, path.join(dir, 'missing')]) {
    assert.throws(
      () => resolveLaunch({ ...none, serverPath }, dir, undefined, probe([]), '/home/u'),
      (error: unknown) => error instanceof LaunchError && error.message.includes(serverPath) && error.fix.includes('agentic.server.path'),
    );
  }
});

test('a python path runs the module; ${workspaceFolder} and ~ are expanded', () => {
  const dir = tmp();
  const python = script(path.join(dir, 'ws', 'tools', 'python'));
  const launch = resolveLaunch({ ...none, pythonPath: '${workspaceFolder}/tools/python' }, path.join(dir, 'ws'), undefined, probe([]), '/home/u');
  assert.equal(launch.command, python);
  assert.deepEqual(launch.args, ['-m', 'agentic_lsp', 'serve']);
  assert.equal(expandPath('~/bin/x', undefined, '/home/u'), '/home/u/bin/x');
  assert.equal(expandPath('tools/python', '/ws', '/home/u'), '/ws/tools/python');
  assert.equal(expandPath('python3', '/ws', '/home/u'), 'python3');
});

test("the workspace's virtual environment comes before the interpreter and PATH", () => {
  const dir = tmp();
  const ws = path.join(dir, 'ws');
  const inVenv = script(path.join(ws, 'venv', 'bin', 'agentic-lsp'));
  script(path.join(dir, 'path', 'agentic-lsp'));
  const launch = resolveLaunch(none, ws, undefined, probe([path.join(dir, 'path')]), '/home/u');
  assert.equal(launch.command, inVenv);
  assert.equal(launch.source, 'workspace venv');
});

test('the selected interpreter: its agentic-lsp script, else the module when importable', () => {
  const dir = tmp();
  const python = script(path.join(dir, 'env', 'bin', 'python'));
  assert.throws(() => resolveLaunch(none, path.join(dir, 'ws'), python, probe([]), '/home/u'), LaunchError);
  const viaModule = resolveLaunch(none, path.join(dir, 'ws'), python, probe([], new Set([python])), '/home/u');
  assert.deepEqual([viaModule.command, ...viaModule.args], [python, '-m', 'agentic_lsp', 'serve']);
  const beside = script(path.join(dir, 'env', 'bin', 'agentic-lsp'));
  const viaScript = resolveLaunch(none, path.join(dir, 'ws'), python, probe([]), '/home/u');
  assert.equal(viaScript.command, beside);
});

test('PATH is the last resort; nothing found names the install command and the setting', () => {
  const dir = tmp();
  const onPath = script(path.join(dir, 'p2', 'agentic-lsp'));
  const launch = resolveLaunch(none, path.join(dir, 'ws'), undefined, probe([path.join(dir, 'p1'), path.join(dir, 'p2')]), '/home/u');
  assert.equal(launch.command, onPath);
  assert.throws(
    () => resolveLaunch(none, path.join(dir, 'ws'), undefined, probe([path.join(dir, 'p1')]), '/home/u'),
    (error: unknown) => error instanceof LaunchError && /make dist/.test(error.fix) && !/install agentic-lsp\b/.test(error.fix) && /agentic\.server\.path/.test(error.fix),
  );
});

test('canImport asks the real interpreter', { skip: !fs.existsSync(VENV_PYTHON) && 'no project .venv' }, () => {
  assert.equal(canImport(VENV_PYTHON), true);
  const bare = tmp();
  const fake = path.join(bare, 'python');
  fs.writeFileSync(fake, '#!/bin/sh\nexit 1\n');
  fs.chmodSync(fake, 0o755);
  assert.equal(canImport(fake), false);
  assert.equal(canImport(path.join(bare, 'no-such-python')), false);
});

test('describeLaunch quotes what a shell would split', () => {
  assert.equal(describeLaunch({ command: '/opt/my tools/agentic-lsp', args: ['serve'], env: {}, source: '' }), '"/opt/my tools/agentic-lsp" serve');
});
