import type { VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';

/**
 * `x-idempotency-key` on the connected-user endpoints: one key, one outcome. The first request with
 * a key does the work and stores its response in the same transaction as the work itself (the SQL
 * functions call sl_complete_idempotent); a repeat meanwhile answers 202 processing, a repeat after
 * answers the stored response byte for byte, and the same key with a different request is a 422
 * (the IETF Idempotency-Key draft's answer), never another request's result. A worker that dies
 * mid-request holds its key only for its lease; a repeat after that takes the work over.
 */
export type IdempotentStart = { outcome: 'started' } | { outcome: 'processing' } | { outcome: 'completed'; status: number; body: string };

export interface IdempotentRequestInput {
  accountId: string;
  key: string;
  /** The endpoint and action, e.g. `api-full-request`, `api-icp-action:create_icp`. */
  operation: string;
  /** Who asks and what: part of the fingerprint, so a repeat must match it exactly. */
  userId: string;
  request: unknown;
  /** How long the work may hold the key before a repeat may take it over. */
  leaseMs: number;
}

/** JSON with object keys sorted at every depth: one request, one spelling, whatever order its keys came in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

async function fingerprint(operation: string, userId: string, request: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(canonicalJson({ operation, user: userId, request }));
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

export async function beginIdempotentRequest({ ctx, input }: VerbArgs<IdempotentRequestInput>): Promise<IdempotentStart> {
  const hash = await fingerprint(input.operation, input.userId, input.request);
  const [row] = await ctx.db<{ outcome: string; response_status: number | null; response_body: string | null }>`
    select * from sl_begin_idempotent(${input.accountId}, ${input.key}, ${input.operation}, ${hash}, ${input.leaseMs})`;
  switch (row?.outcome) {
    case 'started':
      return { outcome: 'started' };
    case 'processing':
      return { outcome: 'processing' };
    case 'completed':
      if (row.response_status === null || row.response_body === null) throw new Error('a completed idempotent request has no response');
      return { outcome: 'completed', status: row.response_status, body: row.response_body };
    case 'mismatch':
      throw new AppError('idempotency_key_reused', 'x-idempotency-key was already used for a different request; use a new key for a new request');
    default:
      throw new Error(`sl_begin_idempotent answered ${String(row?.outcome)}`);
  }
}

/**
 * Gives the key back after a refusal that changed nothing (402, a provider failure, a validation
 * error found late), so the caller may fix the cause and repeat with the same key.
 */
export async function releaseIdempotentRequest({ ctx, input }: VerbArgs<{ accountId: string; key: string }>): Promise<void> {
  await ctx.db`select sl_release_idempotent(${input.accountId}, ${input.key})`;
}
