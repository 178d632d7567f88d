import { badRequest } from '../errors.ts';
import { forbiddenAddressClass, isLocalDevClass, parseIp } from './ip.ts';

/**
 * How much of a receiver's answer a transport reads: enough to show in an attempt log, and small
 * enough that a receiver streaming an endless body costs us nothing. The rest is never read.
 */
export const RECEIVER_ANSWER_MAX_BYTES = 4 * 1024;

/**
 * The longest a transport lets a request wait for a connection — queued behind other requests to
 * the same origin, then connecting — before failing it unsent as "no connection available". It runs
 * before the receiver's `timeoutMs`, so an attempt takes at most this plus `timeoutMs`. 30 s lets a
 * queue three rounds deep get through even when every receiver answer takes the full 10 s; anything
 * that budgets a whole attempt (the delivery lease) must allow for it.
 */
export const WEBHOOK_CONNECTION_WAIT_MS = 30_000;

/**
 * The outbound HTTP port for webhooks. Implementations never follow redirects and must refuse,
 * at connect time, host names that resolve to forbidden addresses (the DNS-rebinding gap);
 * IP-literal hosts are checked here before any connection because they skip DNS.
 *
 * `timeoutMs` is the receiver's time: it runs from when the request goes on the wire (not while
 * it waits for a connection, which WEBHOOK_CONNECTION_WAIT_MS bounds) until the status and the
 * first RECEIVER_ANSWER_MAX_BYTES of the body are in. Only that prefix is read and returned as
 * `body` (UTF-8); a longer body is cancelled, closing its connection. A body that fails or stalls
 * after the status arrived does not undo the status (`body` is then empty).
 */
export interface WebhookTransport {
  request(
    url: string,
    init: { method: 'POST' | 'HEAD'; headers: Record<string, string>; body?: string; timeoutMs: number },
  ): Promise<{ status: number; body?: string }>;
}

export interface DestinationPolicy {
  /** ALLOW_PRIVATE_WEBHOOKS=1: loopback and private destinations allowed (local development, tests). */
  allowPrivate: boolean;
}

const MAX_URL_LENGTH = 2048;
const METADATA_HOSTS = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Why `addressOrHost` may not be called under `policy`, or null when it may. */
export function refusedAddressReason(address: string, policy: DestinationPolicy): string | null {
  const ip = parseIp(address);
  if (!ip) return null;
  const cls = forbiddenAddressClass(ip);
  if (cls === null) return null;
  if (policy.allowPrivate && isLocalDevClass(cls)) return null;
  return `${address} is a ${cls} address`;
}

/**
 * Validates a webhook URL's form and host. Throws a 400 naming `field` on failure; returns the
 * normalised URL. WHATWG URL parsing already turns decimal, octal and hex IPv4 spellings
 * (`http://2130706433/`, `http://0x7f.1/`) into dotted quads, so they are checked like any literal.
 */
export function parseWebhookUrl(raw: string, policy: DestinationPolicy, field = 'webhook_url'): URL {
  if (raw.length > MAX_URL_LENGTH) throw badRequest(`${field} is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest(`${field} is not a valid URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badRequest(`${field} must be an http(s) URL`);
  if (url.username || url.password) throw badRequest(`${field} must not contain credentials`);
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (!host) throw badRequest(`${field} has no host`);
  if (METADATA_HOSTS.has(host)) throw badRequest(`${field} points at a cloud metadata service`);
  if ((host === 'localhost' || host.endsWith('.localhost')) && !policy.allowPrivate) {
    throw badRequest(`${field} points at localhost`);
  }
  const refused = refusedAddressReason(host, policy);
  if (refused) throw badRequest(`${field} is not allowed: ${refused}`);
  return url;
}

const PROBE_TIMEOUT_MS = 5_000;

/**
 * "Valid and reachable": the URL passes the destination rules and a HEAD request gets any HTTP
 * answer within 5 s (a receiver that only accepts POST still answers, e.g. 405). Nothing is
 * posted, so a receiver never sees an unsigned body.
 */
export async function assertReachableWebhook(
  raw: string,
  policy: DestinationPolicy,
  transport: WebhookTransport,
  field = 'webhook_url',
): Promise<string> {
  const url = parseWebhookUrl(raw, policy, field);
  try {
    await transport.request(url.href, {
      method: 'HEAD',
      headers: { 'user-agent': 'Sightline-Webhooks/1 (reachability check)' },
      timeoutMs: PROBE_TIMEOUT_MS,
    });
  } catch (err) {
    throw badRequest(`${field} is not reachable: ${describeNetworkError(err)}`);
  }
  return url.href;
}

export function describeNetworkError(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'no answer within the timeout';
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) return cause.message;
    return err.message;
  }
  return 'connection failed';
}
