/** The workflow graph webview: a run's plan with its current stage highlighted, live. */

import * as vscode from 'vscode';
import type { RunState, RunTracker } from './logic/runTracker';
import { graphHtml, runMermaid, runPage } from './logic/graphPage';

type Shown = { kind: 'run'; runId: string } | { kind: 'workflow'; name: string };

export class GraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: Shown | undefined;
  private mermaid = '';
  private readonly stopWatching: () => void;

  constructor(private readonly tracker: RunTracker) {
    this.stopWatching = tracker.onAny((state) => {
      if (this.shown?.kind === 'run' && this.shown.runId === state.runId) {
        this.renderRun(state);
      }
    });
  }

  private ensurePanel(): vscode.WebviewPanel {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        'agenticWorkflowGraph',
        'Workflow Graph',
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, retainContextWhenHidden: false },
      );
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.shown = undefined;
      });
    }
    return this.panel;
  }

  showRun(runId: string, mermaid: string): void {
    this.shown = { kind: 'run', runId };
    this.mermaid = mermaid;
    const state = this.tracker.get(runId);
    if (state) {
      this.renderRun(state);
    }
    this.panel?.reveal(undefined, true);
  }

  showWorkflow(name: string, mermaid: string): void {
    this.shown = { kind: 'workflow', name };
    this.mermaid = mermaid;
    const panel = this.ensurePanel();
    panel.title = `Workflow: ${name}`;
    panel.webview.html = graphHtml({
      title: `Workflow ${name}`,
      subtitle: 'Every optional stage shown; a run plans the stages its task needs.',
      mermaid,
      marks: {},
      cspSource: panel.webview.cspSource,
    });
    panel.reveal(undefined, true);
  }

  private renderRun(state: RunState): void {
    const mermaid = runMermaid(state, this.mermaid);
    const panel = this.ensurePanel();
    panel.title = `Run: ${state.workflow ?? 'workflow'}`;
    panel.webview.html = graphHtml({ ...runPage(state), mermaid, cspSource: panel.webview.cspSource });
  }

  dispose(): void {
    this.stopWatching();
    this.panel?.dispose();
  }
}
