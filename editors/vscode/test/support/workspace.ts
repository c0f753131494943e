/** The temp workspace the integration and end-to-end tests share: a git repository with a
 * one-stage workflow, the same stage behind a `review: human` gate, a JSON file with a syntax
 * error (VS Code's JSON support reports it as a diagnostic), and a scripted model (a labelled
 * test double, never a real model). */

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '../../../../..');
export const PYTHON = process.env.AGENTIC_TEST_PYTHON ?? path.join(REPO, '.venv', 'bin', 'python');
export const HAVE_SERVER = fs.existsSync(PYTHON);

export const GREET = 'def greet(name):\n    return "hello " + name\n';
export const HELLO = '    return "Hello, " + name + "!"';
export const LINES = Array.from({ length: 40 }, (_, i) => `line_${i} = ${i}\n`).join('');
export const WORKFLOW = `name: vscode_edit
description: One code stage (the VS Code extension's integration test).
retrieval:
  llm_queries: false
  file_top_k: 3
stages:
  - id: code
    name: Code
    type: code
    next_on_success: DONE
`;

export const GATED_WORKFLOW = `name: vscode_gated
description: One code stage whose change a person reviews before the run goes on (the VS Code extension's tests).
retrieval:
  llm_queries: false
  file_top_k: 3
stages:
  - id: code
    name: Code
    type: code
    review: human
    next_on_success: DONE
    next_on_failure: ABORT
`;

/** A comma is missing after the greeting: VS Code's JSON language server says "Expected comma"
 * on line 3. */
export const BROKEN_JSON = '{\n  "greeting": "hello"\n  "excited": true\n}\n';
export const FIXED_JSON = BROKEN_JSON.replace('"hello"\n', '"hello",\n');
export const JSON_ERROR = 'Expected comma';
/** The scripted fix only answers a prompt that holds the editor's selection of the JSON file
 * (the server pins it under this header) and the diagnostic the editor reported there. */
export const FIX_MATCH = `### src/greeting\\.json:\\d+-\\d+ selection \\(editor\\)[\\s\\S]*${JSON_ERROR}`;

/** What the e2e reviewer asks for at the gate, and the message it sends the waiting run. */
export const REVISE_FEEDBACK = 'Name the sum total';
export const RUN_MESSAGE = 'Keep the parameter names a and b';

/** The plan-first run of the e2e test: the plan the scripted planner writes (one ticket), the
 * words the person adds to the ticket's goal in tickets.md at the plan gate, and the task. The
 * ticket's scripted edit answers only the edited goal. */
export const PLAN_TASK = 'Plan the adder docs';
export const PLAN_REPLY = `## Approach
Say in the adder's docstring what it returns.

# Tickets

## T1: Document the adder
- files: src/calc.py
- depends on: none
`;
export const PLAN_EDIT = ' for the user';

export function editReply(old: string, replacement: string, file = 'src/greet.py'): string {
  return `${file}\n<<<<<<< SEARCH\n${old}\n=======\n${replacement}\n>>>>>>> REPLACE\n`;
}

// a step applies to the first prompt it matches; a refine prompt holds the task and the feedback
export const SCRIPT = [
  { role: 'code', match: 'Make the greeting friendlier', reply: editReply('    return "hello " + name', HELLO) },
  { role: 'code', match: 'Also welcome the person', reply: editReply('def greet(name):', 'def greet(name):\n    """Greet and welcome."""') },
  { role: 'code', match: 'Document greet', reply: editReply('def greet(name):', 'def greet(name):\n    """Greet."""') },
  {
    role: 'code',
    match: 'Shout twice',
    reply: editReply('line_3 = 3', 'LINE_3 = 3', 'src/lines.py') + editReply('line_30 = 30', 'LINE_30 = 30', 'src/lines.py'),
  },
  { role: 'code', match: 'Slow task', delay_s: 8, reply: editReply('def greet(name):', 'def greet(name):  # slow') },
  { role: 'code', match: FIX_MATCH, reply: editReply('  "greeting": "hello"', '  "greeting": "hello",', 'src/greeting.json') },
  // the revision of the gated run: only a prompt that holds the reviewer's feedback and the
  // message sent while the run waited gets this edit (a step applies to the first prompt it
  // matches, and the revision's prompt holds the task too: this step comes first)
  { role: 'code', scope: 'conversation', match: `(?=[\\s\\S]*${REVISE_FEEDBACK})(?=[\\s\\S]*${RUN_MESSAGE})`, reply: editReply('    return a + b', '    total = a + b\n    return total', 'src/calc.py') },
  // plan_and_implement (the plan gate's e2e test): discovery, the plan, and the edited ticket
  { role: 'analysis', match: 'Understand the code', reply: '## How it works\n`src/calc.py:1` adds two numbers.' },
  { role: 'analysis', match: 'Plan and tickets', reply: PLAN_REPLY },
  {
    role: 'code',
    match: `Document the adder${PLAN_EDIT}`,
    reply: editReply('    """Add two numbers."""', '    """Add two numbers; return their sum."""', 'src/calc.py'),
  },
  { role: 'code', match: 'Type the adder', reply: editReply('def add_numbers(a, b):', 'def add_numbers(a: int, b: int) -> int:', 'src/calc.py') },
];

function yamlScript(steps: typeof SCRIPT): string {
  // JSON is YAML: no YAML library needed
  return JSON.stringify({ steps });
}

export function git(root: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
}

export function makeWorkspace(base: string, files: Record<string, string> = {}): { root: string; script: string } {
  const root = path.join(base, 'repo');
  fs.mkdirSync(path.join(root, 'src'), { recursive: true });
  fs.mkdirSync(path.join(root, '.agentic-lsp', 'workflows'), { recursive: true });
  fs.writeFileSync(path.join(root, 'src', 'greet.py'), GREET);
  fs.writeFileSync(path.join(root, 'src', 'calc.py'), 'def add_numbers(a, b):\n    """Add two numbers."""\n    return a + b\n');
  fs.writeFileSync(path.join(root, 'src', 'lines.py'), LINES);
  fs.writeFileSync(path.join(root, 'src', 'greeting.json'), BROKEN_JSON);
  fs.writeFileSync(path.join(root, 'README.md'), '# Demo\n\nGreets people and adds numbers.\n');
  fs.writeFileSync(path.join(root, '.agentic-lsp', 'workflows', 'vscode_edit.yaml'), WORKFLOW);
  fs.writeFileSync(path.join(root, '.agentic-lsp', 'workflows', 'vscode_gated.yaml'), GATED_WORKFLOW);
  const script = path.join(base, 'script.yaml');
  fs.writeFileSync(script, yamlScript(SCRIPT));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text.split('${script}').join(script));
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'config', 'user.name', 'Test');
  git(root, 'config', 'user.email', 'test@example.com');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return { root, script };
}

/** The server's environment: its own cache and config, offline, no agentic-lsp settings of the
 * machine it runs on. */
export function serverEnv(base: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('AGENTIC_LSP_') && key !== 'OLLAMA_HOST') {
      env[key] = value;
    }
  }
  return Object.assign(env, {
    AGENTIC_LSP_CACHE_DIR: path.join(base, 'cache'),
    AGENTIC_LSP_CONFIG: path.join(base, 'no-user-config.toml'),
    XDG_CONFIG_HOME: path.join(base, 'xdg-config'),
    XDG_CACHE_HOME: path.join(base, 'xdg-cache'),
    HF_HUB_OFFLINE: '1',
    TOKENIZERS_PARALLELISM: 'false',
  });
}
