/** The workflow graph webview's page: the SVG of {@link renderSvg}, a legend and the mermaid
 * source, themed with VS Code's colours; a strict CSP and no script. */

import { stageUsage, usageShort, usageText, type RunState } from './runTracker';
import { escapeXml, marksFromStages, parseMermaid, renderSvg, styleMermaid, type GraphMarks } from './workflowGraph';

export interface GraphPage {
  title: string;
  subtitle: string;
  mermaid: string;
  marks: GraphMarks;
  cspSource: string;
}

/** A run's mermaid: the server's plan with the stages' node states appended
 * ({@link styleMermaid}). */
export function runMermaid(state: RunState, fallback = ''): string {
  const mermaid = state.mermaid ?? fallback;
  return Object.keys(state.nodeStates).length && mermaid ? styleMermaid(mermaid, state.nodeStates) : mermaid;
}

/** A run's page, less its mermaid and CSP: stages coloured by their node state (by their
 * verdict when the server sent no states), each with its tokens. */
export function runPage(state: RunState): Pick<GraphPage, 'title' | 'subtitle' | 'marks'> {
  const what = state.workflow ? `${state.workflow}` : 'workflow';
  const now = state.currentStage
    ? `running ${state.currentStage}`
    : state.status === 'waiting_input'
      ? `waiting for your review${state.pending ? ` of ${state.pending.stage}` : ''}`
      : state.status;
  const changeset = state.changesetId ? `, changeset ${state.changesetId}` : '';
  const notes = new Map<string, string>();
  for (const [stage, usage] of stageUsage(state)) {
    notes.set(stage, usageShort(usage));
  }
  return {
    title: `${what} — ${state.task || state.runId}`,
    subtitle: `run ${state.runId}: ${now}${changeset} · ${usageText(state.usage)}`,
    marks: Object.keys(state.nodeStates).length ? { notes } : { ...marksFromStages(state.currentStage, state.finished), notes },
  };
}

/** The whole webview page: the SVG, a legend, and the mermaid source (no script). */
export function graphHtml(page: GraphPage): string {
  const graph = parseMermaid(page.mermaid);
  const withStates = graph.nodes.some((n) => n.state);
  const legend = withStates
    ? '<span><i class="s-ready"></i>ready</span><span><i class="s-running"></i>running</span>' +
      '<span><i class="s-waiting"></i>waits for your review</span><span><i class="s-completed"></i>completed</span>' +
      '<span><i class="s-failed"></i>failed</span><span><i class="s-pruned"></i><s>pruned / skipped</s></span>'
    : '<span><i class="current"></i>running now</span><span><i class="ok"></i>finished</span><span><i class="failed"></i>failed</span>';
  const svg = graph.nodes.length
    ? renderSvg(graph, page.marks)
    : '<p class="empty">The server returned no graph.</p>';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline' ${page.cspSource}; img-src ${page.cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeXml(page.title)}</title>
<style>
  body { font-family: var(--vscode-font-family, sans-serif); color: var(--vscode-foreground, #333); padding: 12px 18px; }
  h1 { font-size: 1.2em; margin: 0 0 2px 0; }
  .subtitle { opacity: 0.8; margin-bottom: 12px; }
  .node rect { fill: var(--vscode-editorWidget-background, #f2f0ff); stroke: var(--vscode-editorWidget-border, #8a80d8); stroke-width: 1.2; }
  .node text { fill: var(--vscode-editor-foreground, #222); font-size: 13px; font-family: var(--vscode-editor-font-family, monospace); }
  .node.terminal rect { fill: var(--vscode-badge-background, #bfb6fc); }
  .node.terminal text { fill: var(--vscode-badge-foreground, #222); }
  .node.ok rect { fill: var(--vscode-testing-iconPassed, #388a34); fill-opacity: 0.25; stroke: var(--vscode-testing-iconPassed, #388a34); }
  .node.failed rect { fill: var(--vscode-testing-iconFailed, #c72e0f); fill-opacity: 0.25; stroke: var(--vscode-testing-iconFailed, #c72e0f); }
  .node.current rect { fill: var(--vscode-focusBorder, #007fd4); fill-opacity: 0.35; stroke: var(--vscode-focusBorder, #007fd4); stroke-width: 3; }
  .node.current text { font-weight: bold; }
  .node text.note { font-size: 11px; font-weight: normal; opacity: 0.85; }
  .edge { fill: none; stroke: var(--vscode-editorLineNumber-foreground, #888); stroke-width: 1.3; }
  .edge.dotted { stroke-dasharray: 4 3; }
  .arrowhead { fill: var(--vscode-editorLineNumber-foreground, #888); }
  .edge-label { fill: var(--vscode-descriptionForeground, #666); font-size: 11px; }
  .legend span { display: inline-block; margin-right: 14px; }
  .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; border-radius: 3px; }
  .legend .current { background: var(--vscode-focusBorder, #007fd4); }
  .legend .ok { background: var(--vscode-testing-iconPassed, #388a34); }
  .legend .failed { background: var(--vscode-testing-iconFailed, #c72e0f); }
  .node.state-ready rect { fill: var(--vscode-disabledForeground, #9e9e9e); fill-opacity: 0.15; stroke: var(--vscode-disabledForeground, #9e9e9e); }
  .node.state-running rect { fill: var(--vscode-charts-blue, #0d6efd); fill-opacity: 0.3; stroke: var(--vscode-charts-blue, #0d6efd); stroke-width: 3; }
  .node.state-running text { font-weight: bold; }
  .node.state-waiting-input rect { fill: var(--vscode-charts-orange, #fd7e14); fill-opacity: 0.3; stroke: var(--vscode-charts-orange, #fd7e14); stroke-width: 3; }
  .node.state-waiting-input text { font-weight: bold; }
  .node.state-completed rect { fill: var(--vscode-testing-iconPassed, #388a34); fill-opacity: 0.25; stroke: var(--vscode-testing-iconPassed, #388a34); }
  .node.state-failed rect { fill: var(--vscode-testing-iconFailed, #c72e0f); fill-opacity: 0.25; stroke: var(--vscode-testing-iconFailed, #c72e0f); }
  .node.state-pruned rect, .node.state-skipped rect { fill: none; stroke: var(--vscode-disabledForeground, #9e9e9e); stroke-dasharray: 5 4; }
  .node.state-pruned text, .node.state-skipped text { text-decoration: line-through; opacity: 0.6; }
  .legend .s-ready { background: var(--vscode-disabledForeground, #9e9e9e); opacity: 0.5; }
  .legend .s-running { background: var(--vscode-charts-blue, #0d6efd); }
  .legend .s-waiting { background: var(--vscode-charts-orange, #fd7e14); }
  .legend .s-completed { background: var(--vscode-testing-iconPassed, #388a34); }
  .legend .s-failed { background: var(--vscode-testing-iconFailed, #c72e0f); }
  .legend .s-pruned { border: 1px dashed var(--vscode-disabledForeground, #9e9e9e); }
  details { margin-top: 16px; }
  pre { background: var(--vscode-textCodeBlock-background, #f4f4f4); padding: 8px; overflow: auto; }
</style>
</head>
<body>
<h1>${escapeXml(page.title)}</h1>
<div class="subtitle">${escapeXml(page.subtitle)}</div>
<div class="legend">${legend}<span>dotted: conditional route</span></div>
${svg}
<details><summary>Mermaid source</summary><pre>${escapeXml(page.mermaid)}</pre></details>
</body>
</html>`;
}
