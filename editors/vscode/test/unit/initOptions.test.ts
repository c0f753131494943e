import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInitializationOptions, deepMerge, normaliseOllamaHost, SettingsError } from '../../src/logic/initOptions';

test('nothing set sends nothing, so the workspace file and the server defaults stay in charge', () => {
  assert.deepEqual(buildInitializationOptions({}), {});
  assert.deepEqual(buildInitializationOptions({ ollamaHost: '  ', model: '' }), {});
});

test('each setting lands at its key of the server settings', () => {
  const options = buildInitializationOptions({
    ollamaHost: 'gpu-box:11434/',
    model: 'qwen2.5-coder:14b',
    mcpHttpPort: 8765,
    commitOnAccept: false,
    logLevel: 'debug',
  });
  assert.deepEqual(options, {
    llm: { ollama_host: 'http://gpu-box:11434', model: 'qwen2.5-coder:14b' },
    mcp: { http_port: 8765 },
    changes: { commit_on_accept: false },
    log_level: 'DEBUG',
  });
});

test('agentic.server.settings passes through, under the specific settings', () => {
  const options = buildInitializationOptions({
    model: 'mine',
    extra: { llm: { provider: 'scripted', script_path: '/s.yaml', model: 'theirs' }, index: { watch: false } },
  });
  assert.deepEqual(options, { llm: { provider: 'scripted', script_path: '/s.yaml', model: 'mine' }, index: { watch: false } });
});

test('a port out of range or settings that are not an object are refused', () => {
  assert.throws(() => buildInitializationOptions({ mcpHttpPort: 70000 }), SettingsError);
  assert.throws(() => buildInitializationOptions({ mcpHttpPort: 1.5 }), SettingsError);
  assert.throws(() => buildInitializationOptions({ extra: ['x'] as unknown as Record<string, unknown> }), SettingsError);
});

test('VS Code workspace trust vouches for the folder; untrusted sends nothing', () => {
  assert.deepEqual(buildInitializationOptions({ workspaceTrusted: true }), { trustWorkspace: true });
  assert.deepEqual(buildInitializationOptions({ workspaceTrusted: false }), {});
  assert.deepEqual(buildInitializationOptions({}), {});
});

test('deepMerge and host normalisation', () => {
  assert.deepEqual(deepMerge({ a: { b: 1, c: 2 }, d: [1] }, { a: { c: 3 }, d: [2] }), { a: { b: 1, c: 3 }, d: [2] });
  assert.equal(normaliseOllamaHost('https://x.example/'), 'https://x.example');
  assert.equal(normaliseOllamaHost('127.0.0.1:11434'), 'http://127.0.0.1:11434');
});
