/**
 * Errors from the server as the user should read them: the server answers engine errors with
 * JSON-RPC code -32803 (RequestFailed) and `data: {kind, hint}`; a stale changeset has kind
 * `stale` and is fixed by refreshing it.
 */

import type { ServerErrorData } from './protocol';

export const REQUEST_FAILED = -32803;
export const INVALID_PARAMS = -32602;
export const REQUEST_CANCELLED = -32800;

export interface UserError {
  message: string;
  hint: string;
  stale: boolean;
  cancelled: boolean;
}

export function toUserError(error: unknown): UserError {
  const e = error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const raw = typeof e?.message === 'string' ? e.message : String(error);
  const data = (e && typeof e.data === 'object' && e.data !== null ? e.data : {}) as ServerErrorData;
  const fixIndex = raw.indexOf('\n  fix: ');
  const hint = typeof data.hint === 'string' ? data.hint : fixIndex >= 0 ? raw.slice(fixIndex + 8) : '';
  // the server's message repeats the hint as "\n  fix: …"; keep it once
  const message = fixIndex >= 0 ? raw.slice(0, fixIndex) : raw;
  return {
    message: message.replace(/^Request \S+ failed with message: /, ''),
    hint,
    stale: data.kind === 'stale',
    cancelled: code === REQUEST_CANCELLED,
  };
}

/** One line: the message, then what to do about it. */
export function formatUserError(error: unknown, action?: string): string {
  const u = toUserError(error);
  const prefix = action ? `${action} failed: ` : '';
  return `${prefix}${u.message}${u.hint ? ` — ${u.hint}` : ''}`;
}
