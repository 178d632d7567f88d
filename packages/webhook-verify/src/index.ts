/**
 * Verifies a Sightline webhook delivery: the hex HMAC-SHA256 of `<X-Service-Timestamp>.<raw body>`
 * keyed with the webhook secret, compared in constant time, with the timestamp (unix milliseconds)
 * inside a tolerance in both directions. Several secrets may be given, to cover a rotation.
 *
 * Always verify the raw request bytes: a re-serialised JSON body will not match.
 */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** Accepted clock difference, either direction (default 300 s). */
  toleranceSeconds?: number;
  /** Current time in milliseconds (for tests). */
  now?: () => number;
}

export interface VerifiedEvent<T = Record<string, unknown>> {
  event: string;
  timestamp: string;
  data: T;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const rec = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : rec[key];
  return Array.isArray(value) ? value[0] : value;
}

const encoder = new TextEncoder();

async function hmacHex(secret: string, message: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = new Uint8Array(await crypto.subtle.sign('HMAC', key, message as Uint8Array<ArrayBuffer>));
  let hex = '';
  for (const b of sig) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** Constant-time comparison of two strings of hex digits. */
function timingSafeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/**
 * Throws WebhookVerificationError with a precise reason, or returns the parsed event.
 * `rawBody` is the request body exactly as received (string or bytes).
 */
export async function verifyWebhook<T = Record<string, unknown>>(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secrets: string | readonly string[],
  options: VerifyOptions = {},
): Promise<VerifiedEvent<T>> {
  const signature = header(headers, 'x-service-signature')?.trim().toLowerCase();
  const timestamp = header(headers, 'x-service-timestamp')?.trim();
  const eventName = header(headers, 'x-service-event');
  if (!signature) throw new WebhookVerificationError('missing X-Service-Signature header');
  if (!timestamp) throw new WebhookVerificationError('missing X-Service-Timestamp header');
  if (/^\d{10}$/.test(timestamp)) {
    throw new WebhookVerificationError('X-Service-Timestamp has 10 digits (seconds); Sightline sends 13-digit unix milliseconds');
  }
  if (!/^\d{13}$/.test(timestamp)) throw new WebhookVerificationError('X-Service-Timestamp must be 13-digit unix milliseconds');
  if (!/^[0-9a-f]{64}$/.test(signature)) throw new WebhookVerificationError('X-Service-Signature must be 64 hex digits');

  const tolerance = (options.toleranceSeconds ?? 300) * 1000;
  const now = (options.now ?? Date.now)();
  const skew = now - Number(timestamp);
  if (skew > tolerance) throw new WebhookVerificationError(`timestamp is ${Math.round(skew / 1000)} s old, beyond the tolerance`);
  if (-skew > tolerance) throw new WebhookVerificationError(`timestamp is ${Math.round(-skew / 1000)} s in the future, beyond the tolerance`);

  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (!list.length) throw new WebhookVerificationError('no secret to verify with');
  const bytes = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
  const message = concat(encoder.encode(`${timestamp}.`), bytes);
  let matched = false;
  for (const secret of list) {
    // Every secret is tried, so the time taken does not reveal which one matched.
    if (timingSafeEqual(await hmacHex(secret, message), signature)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('signature does not match (check the secret and that the body is the raw bytes)');

  let parsed: VerifiedEvent<T>;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes)) as VerifiedEvent<T>;
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
  if (eventName && parsed.event !== eventName) {
    throw new WebhookVerificationError('X-Service-Event does not match the body’s event');
  }
  return parsed;
}

/** Signs like Sightline does; for receivers' own tests. */
export async function signWebhook(secret: string, timestampMs: number, rawBody: string): Promise<string> {
  return hmacHex(secret, encoder.encode(`${timestampMs}.${rawBody}`));
}
