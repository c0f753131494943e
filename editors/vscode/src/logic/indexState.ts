/**
 * The index state shown in the status bar, kept per workspace folder from `index_state`
 * events and `agentic.indexStatus` answers.
 */

import type { AgenticEvent, IndexStatus } from './protocol';

export interface RootIndexState {
  root: string;
  state: string;
  phase: string;
  files: number;
  symbols: number;
  message: string;
}

export interface StatusBarView {
  text: string;
  tooltip: string;
  /** 'error' and 'warning' pick the status bar item's background colour. */
  severity: 'normal' | 'warning' | 'error';
}

const ICONS: Record<string, string> = {
  starting: '$(sync~spin)',
  indexing: '$(sync~spin)',
  embedding: '$(sync~spin)',
  ready: '$(check)',
  degraded: '$(warning)',
  error: '$(error)',
  stopped: '$(circle-slash)',
};

export class IndexStates {
  private readonly roots = new Map<string, RootIndexState>();
  serverState: 'starting' | 'running' | 'stopped' | 'failed' = 'starting';

  fromEvent(event: AgenticEvent): boolean {
    if (event.kind !== 'index_state' || !event.root) {
      return false;
    }
    const d = event.data;
    this.roots.set(event.root, {
      root: event.root,
      state: String(d.state ?? 'unknown'),
      phase: String(d.phase ?? ''),
      files: Number(d.files ?? 0),
      symbols: Number(d.symbols ?? 0),
      message: String(d.message ?? ''),
    });
    return true;
  }

  fromStatus(status: IndexStatus): void {
    this.roots.set(status.root, {
      root: status.root,
      state: status.state,
      phase: status.progress?.phase ?? '',
      files: status.files,
      symbols: status.symbols,
      message: status.message,
    });
  }

  forget(root: string): void {
    this.roots.delete(root);
  }

  clear(): void {
    this.roots.clear();
  }

  list(): RootIndexState[] {
    return [...this.roots.values()];
  }

  view(): StatusBarView {
    if (this.serverState === 'stopped' || this.serverState === 'failed') {
      const failed = this.serverState === 'failed';
      return {
        text: `${failed ? ICONS.error : ICONS.stopped} agentic: ${failed ? 'server failed' : 'stopped'}`,
        tooltip: failed
          ? 'The agentic-lsp server is not running. Click for details; "Agentic: Restart Server" starts it again.'
          : 'The agentic-lsp server is stopped.',
        severity: failed ? 'error' : 'warning',
      };
    }
    const roots = this.list();
    if (roots.length === 0) {
      return { text: `${ICONS.starting} agentic: starting`, tooltip: 'Starting agentic-lsp…', severity: 'normal' };
    }
    const worst = roots.reduce((a, b) => (rank(b.state) > rank(a.state) ? b : a));
    const files = roots.reduce((sum, r) => sum + r.files, 0);
    const symbols = roots.reduce((sum, r) => sum + r.symbols, 0);
    const icon = ICONS[worst.state] ?? '$(database)';
    const phase = worst.phase && worst.state !== 'ready' ? ` (${worst.phase})` : '';
    const label = worst.state === 'ready' ? `${files} files` : `${worst.state}${phase}`;
    const lines = roots.map((r) => {
      const extra = r.message ? ` — ${r.message}` : '';
      return `${r.root}: ${r.state}${r.phase && r.state !== 'ready' ? ` (${r.phase})` : ''}, ${r.files} files, ${r.symbols} symbols${extra}`;
    });
    return {
      text: `${icon} agentic: ${label}`,
      tooltip: `${lines.join('\n')}\n${files} files, ${symbols} symbols in all. Click for the index status.`,
      severity: worst.state === 'error' ? 'error' : worst.state === 'degraded' ? 'warning' : 'normal',
    };
  }
}

function rank(state: string): number {
  return ['ready', 'starting', 'embedding', 'indexing', 'degraded', 'error'].indexOf(state);
}

/** The index status as readable lines (for "Show Index Status"). */
export function describeStatus(status: IndexStatus): string[] {
  const lines = [
    `${status.root}`,
    `state: ${status.state}${status.message ? ` — ${status.message}` : ''}`,
    `files: ${status.files}, symbols: ${status.symbols}, embeddings pending: ${status.densePending}`,
    `store: ${status.store}`,
  ];
  if (status.progress) {
    const p = status.progress;
    const eta = p.etaS !== null && p.etaS !== undefined ? `, about ${Math.ceil(p.etaS)} s left` : '';
    lines.push(`progress: ${p.phase} ${p.done}/${p.total}${eta}`);
  }
  const summary = status.lastSummary;
  if (summary) {
    const timings = summary.timings;
    const total = timings ? Object.values(timings).reduce((a, b) => a + b, 0) : undefined;
    lines.push(
      `last index: ${summary.parsed} parsed, ${summary.unchanged} unchanged, ` +
        `${summary.removed} removed${total !== undefined ? `, ${total.toFixed(1)} s` : ''}`,
    );
  }
  return lines;
}
