import { Address4, Address6 } from 'ip-address';
import { badRequest } from '../errors.ts';
import { forbiddenAddressClass, isLocalDevClass, type ParsedIp } from './ip.ts';

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
 * after the status arrived does not undo the status (`body` is then empty). `maxAnswerBytes` raises
 * the cap for a caller that reads a page (the install check), and `headers` are the answer's, names
 * in lower case (an integration's delivery honours Retry-After; the install check reads the CSP).
 */
export interface WebhookTransport {
  request(
    url: string,
    init: { method: 'POST' | 'HEAD' | 'GET'; headers: Record<string, string>; body?: string; timeoutMs: number; maxAnswerBytes?: number },
  ): Promise<{ status: number; body?: string; headers?: Record<string, string> }>;
}

export interface DestinationPolicy {
  /** ALLOW_PRIVATE_WEBHOOKS=1: loopback and private destinations allowed (local development, tests). */
  allowPrivate: boolean;
}

const MAX_URL_LENGTH = 2048;
const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/**
 * IPv4 as inet_aton reads it (and so getaddrinfo, curl and WHATWG URL): one to four parts, each
 * decimal, octal (leading 0) or hex (0x), then an optional dot. `0177.0.0.1`, `0x7f.1`, `127.1` and
 * `2130706433` all mean 127.0.0.1 to a resolver, while a strict parser calls them "not an address"
 * — the classic SSRF bypass. Text of this shape is therefore never treated as a host name.
 */
const INET_ATON_SHAPE = /^(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?$/i;

/**
 * What a host name may be made of once WHATWG URL has applied IDNA (ASCII letters, digits, `-`,
 * `.`, and `_`, which DNS tolerates). Anything else that is not an address literal is refused, so
 * text a resolver might read in some other way never passes as "just a name".
 */
const HOST_NAME = /^[a-z0-9._-]+$/i;

/**
 * Reads a URL host or a resolved address with ip-address: this path is cold (once per URL check
 * and per connection) and a wrong answer here is an SSRF hole, so the library's parse is the one
 * used. `name` means "a host name, to be checked again on the addresses it resolves to".
 */
function readDestination(text: string): { ip: ParsedIp } | { malformed: string } | { name: true } {
  if (text.includes(':')) {
    // Address6 would also take a `/prefix`; a destination is one address, never a network.
    if (text.includes('/')) return { malformed: 'is not an IP address or host name' };
    try {
      // A zone id (`fe80::1%eth0`, as dns.lookup may return for a scoped address) picks an
      // interface, not a destination: the address is judged without it.
      const a = new Address6(text);
      return { ip: { version: 6, groups: a.parsedAddress.map((g) => parseInt(g, 16)) } };
    } catch {
      return { malformed: 'is not a valid IPv6 address' };
    }
  }
  if (INET_ATON_SHAPE.test(text)) {
    try {
      return { ip: { version: 4, value: Number(new Address4(text).bigInt()) } };
    } catch {
      // Leading zeros, hex, short forms, a trailing dot: what it means depends on who reads it.
      return { malformed: 'is not a canonical dotted-quad IPv4 address (a resolver may read it as another address)' };
    }
  }
  return HOST_NAME.test(text) ? { name: true } : { malformed: 'is not an IP address or host name' };
}

/**
 * Why `address` (an IP literal, a resolved address or a host name) may not be called under
 * `policy`, or null when it may. A host name passes here and is judged again on what it resolves
 * to; text that is neither a canonical address nor a plain host name is refused (fail closed).
 */
export function refusedAddressReason(address: string, policy: DestinationPolicy): string | null {
  const read = readDestination(address);
  if ('malformed' in read) return `${address} ${read.malformed}`;
  if ('name' in read) return null;
  const cls = forbiddenAddressClass(read.ip);
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
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
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
