/** Items of the quick picks: workflows (with "Auto" first) and semantic search results. */

import type { SearchHit, WorkflowInfo } from './protocol';

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

/** `null` value: let the server's orchestrator choose the workflow for the task. */
export function workflowItems(workflows: WorkflowInfo[]): PickItem<string | null>[] {
  const auto: PickItem<string | null> = {
    label: '$(sparkle) Auto',
    description: 'the orchestrator picks the workflow and its stages for the task',
    value: null,
  };
  const sorted = [...workflows].sort((a, b) => a.name.localeCompare(b.name));
  return [
    auto,
    ...sorted.map((w) => ({
      label: w.name,
      description: w.stages.map((s) => (s.required ? s.id : `${s.id}?`)).join(' → '),
      detail: firstLine(w.description),
      value: w.name,
    })),
  ];
}

export function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 160 ? `${line.slice(0, 157)}…` : line.trim();
}

const KIND_ICONS: Record<string, string> = {
  file: 'file',
  function: 'symbol-function',
  method: 'symbol-method',
  class: 'symbol-class',
  section: 'symbol-string',
};

export function searchItems(hits: SearchHit[]): PickItem<SearchHit>[] {
  return hits.map((hit) => {
    const icon = KIND_ICONS[hit.kind] ?? 'symbol-misc';
    const name = hit.symbol ?? hit.path.split('/').pop() ?? hit.path;
    const lines = hit.startLine === hit.endLine ? `${hit.startLine}` : `${hit.startLine}-${hit.endLine}`;
    return {
      label: `$(${icon}) ${name}`,
      description: `${hit.path}:${lines}`,
      detail: hit.signature ? firstLine(hit.signature) : `${hit.kind}, score ${hit.score.toFixed(3)}`,
      value: hit,
    };
  });
}
