/**
 * The one request shape, answer reading and outcome every integration adapter shares. Adapters never
 * sleep and never retry: they return an outcome, and the outbox schedules the next attempt (using
 * `retryAfterMs` when the vendor named one).
 */
import { readBodyTextPrefix } from '../kernel/net/bounded-body.ts';
import { describeNetworkError } from '../kernel/net/webhook-destination.ts';

/**
 * The outbound HTTP port, injected: production passes the SSRF-guarded transport, tests pass the
 * global fetch (whose signature fits). `signal` carries the adapter's timeout; a transport with its
 * own timer may ignore it.
 */
export type Send = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<VendorResponse>;

export interface VendorResponse {
  status: number;
  headers: Headers | Record<string, string>;
  text(): Promise<string>;
}

/**
 * What one adapter call came to. `error` names the vendor and status and quotes the vendor's own
 * short reason; it never holds a token nor a webhook URL's secret path.
 */
export type DeliveryOutcome =
  | { ok: true; externalId?: string }
  | { ok: false; retryable: boolean; retryAfterMs?: number; status?: number; error: string };

/** What every adapter takes besides its input. */
export interface VendorDeps {
  send: Send;
  /** The clock Retry-After dates are read against (tests fix it). */
  now?: () => number;
  /** Per request; VENDOR_TIMEOUT_MS when absent. */
  timeoutMs?: number;
}

/** What a CRM adapter takes: the account's token (opened from its seal by the caller) and a base URL to override. */
export interface CrmDeps extends VendorDeps {
  token: string;
  baseUrl?: string;
}

/** How long an adapter waits for one answer before calling it a (retryable) timeout. */
export const VENDOR_TIMEOUT_MS = 10_000;
/** The most of a vendor's answer we read: their JSON answers here are a few KiB. */
const ANSWER_MAX_BYTES = 1024 * 1024;
/** The most of a vendor's own error text an outcome quotes. */
const DETAIL_MAX_CHARS = 200;

export interface VendorAnswer {
  status: number;
  headers: Headers | Record<string, string>;
  text: string;
}

/**
 * One request. Resolves the answer (any status), or a retryable failure when there was none: a
 * refused connection, a reset, a timeout. `secrets` are cut out of any error text (a transport's
 * message may quote the URL).
 */
export async function callVendor(
  send: Send,
  vendor: string,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  secrets: readonly string[],
  timeoutMs = VENDOR_TIMEOUT_MS,
): Promise<VendorAnswer | Extract<DeliveryOutcome, { ok: false }>> {
  try {
    const res = await send(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, headers: res.headers, text: await readAnswer(res) };
  } catch (err) {
    return { ok: false, retryable: true, error: redact(`${vendor}: no answer (${describeNetworkError(err)})`, secrets) };
  }
}

export function isAnswer(r: VendorAnswer | DeliveryOutcome): r is VendorAnswer {
  return 'status' in r && 'text' in r;
}

/**
 * The answer's text, at most ANSWER_MAX_BYTES of it (a Response is never read past that; another
 * transport's answer is already bounded by it). A body that fails after the status arrived leaves
 * the status standing with an empty text, as the webhook transport does: a 2xx whose body broke off
 * was still delivered, and retrying it would post twice.
 */
async function readAnswer(res: VendorResponse): Promise<string> {
  try {
    if (typeof Response !== 'undefined' && res instanceof Response) return (await readBodyTextPrefix(res, ANSWER_MAX_BYTES)).text;
    return (await res.text()).slice(0, ANSWER_MAX_BYTES);
  } catch {
    return '';
  }
}

/** A header's value whatever the transport's header shape; names are case-insensitive. */
export function headerOf(headers: Headers | Record<string, string>, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, string>)) if (key.toLowerCase() === wanted) return value;
  return null;
}

/**
 * Retry-After (RFC 9110 §10.2.3) as milliseconds from `nowMs`: either delay-seconds or an HTTP-date.
 * A date in the past is 0 (retry now); anything else unreadable is undefined (the outbox's schedule).
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** `text` with every secret (of four characters or more) replaced; a short one would cut ordinary words. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

/**
 * The vendor's own short reason from an error answer: a JSON `message` / `error` / `error.message`,
 * else the start of the text. Cut short and redacted.
 */
export function vendorDetail(text: string, secrets: readonly string[]): string | null {
  let detail: string | null = null;
  try {
    const body = JSON.parse(text) as unknown;
    if (body && typeof body === 'object') {
      const o = body as Record<string, unknown>;
      const nested = o.error && typeof o.error === 'object' ? (o.error as Record<string, unknown>).message : undefined;
      detail = [o.message, o.error, nested, o.error_info].find((v): v is string => typeof v === 'string' && v.trim() !== '') ?? null;
    }
  } catch {
    detail = text.trim() || null;
  }
  if (detail === null) return null;
  const oneLine = redact(detail.replace(/\s+/g, ' ').trim(), secrets);
  return oneLine.length > DETAIL_MAX_CHARS ? `${oneLine.slice(0, DETAIL_MAX_CHARS - 1)}…` : oneLine;
}

/**
 * The outcome of an answer that is not the 2xx the step wanted, by HTTP meaning: 408, 425 and 429
 * are "later" (with the vendor's Retry-After, else `fallbackDelayMs`), other 4xx are permanent
 * (a bad token, a missing scope, a gone channel: retrying changes nothing), 5xx are "later".
 */
export function failureOf(
  vendor: string,
  answer: VendorAnswer,
  secrets: readonly string[],
  nowMs: number,
  fallbackDelayMs?: number,
): Extract<DeliveryOutcome, { ok: false }> {
  const detail = vendorDetail(answer.text, secrets);
  const error = `${vendor} answered HTTP ${answer.status}${detail ? `: ${detail}` : ''}`;
  const status = answer.status;
  if (status === 408 || status === 425 || status === 429) {
    const retryAfterMs = parseRetryAfter(headerOf(answer.headers, 'retry-after'), nowMs) ?? fallbackDelayMs;
    return retryAfterMs === undefined ? { ok: false, retryable: true, status, error } : { ok: false, retryable: true, retryAfterMs, status, error };
  }
  return { ok: false, retryable: status >= 500, status, error };
}

/** A 2xx whose body is not the JSON the step needs: the write may have landed, so a retry (idempotent) is right. */
export function unexpectedAnswer(vendor: string, status: number, what: string): Extract<DeliveryOutcome, { ok: false }> {
  return { ok: false, retryable: true, status, error: `${vendor} answered HTTP ${status} without ${what}` };
}

/** The JSON object of a 2xx answer, or null when it is not one. */
export function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Escapes text for an HTML note body (HubSpot's hs_note_body, Pipedrive's note content). */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/**
 * The reference a CRM note carries so a retried push can find it: "slref" and 32 hex characters of
 * SHA-256 over the caller's idempotency key. Letters and digits only, so a vendor's search tokenizer
 * keeps it one word whatever characters the key has.
 */
export async function noteReference(idempotencyKey: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(idempotencyKey)));
  return `slref${Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A 2xx JSON answer of one CRM step, or the outcome that ends the push. */
export type JsonStep = { json: Record<string, unknown>; status: number } | Extract<DeliveryOutcome, { ok: false }>;

/**
 * One JSON request of a CRM push: 2xx with a JSON object goes on; anything else ends the push with
 * its outcome (see failureOf; `fallbackDelayMs` reads a vendor's own rate-limit headers when a 429
 * has no Retry-After).
 */
export async function requestJson(
  deps: VendorDeps,
  vendor: string,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  secrets: readonly string[],
  fallbackDelayMs: (answer: VendorAnswer) => number | undefined = () => undefined,
): Promise<JsonStep> {
  const answer = await callVendor(deps.send, vendor, url, init, secrets, deps.timeoutMs);
  if (!isAnswer(answer)) return answer;
  if (answer.status < 200 || answer.status >= 300) return failureOf(vendor, answer, secrets, (deps.now ?? Date.now)(), fallbackDelayMs(answer));
  const json = jsonObject(answer.text);
  return json ? { json, status: answer.status } : unexpectedAnswer(vendor, answer.status, 'a JSON object');
}

export function isFailure(step: JsonStep): step is Extract<DeliveryOutcome, { ok: false }> {
  return 'ok' in step;
}

/** `base` (with or without a trailing slash) + `path`. */
export function vendorUrl(base: string, path: string, query?: Record<string, string>): string {
  const url = new URL(`${base.replace(/\/+$/, '')}${path}`);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
  return url.href;
}

/** An id as the vendors send it (HubSpot: a string; Pipedrive: a number), or null. */
export function idOf(value: unknown): string | null {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return null;
}
