import { hmacSha256Hex } from '../kernel/crypto.ts';

/**
 * The spec's signing scheme: X-Service-Signature = hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed
 * with the webhook secret, where <timestamp> is X-Service-Timestamp (unix milliseconds at dispatch).
 */
export async function signDelivery(secret: string, timestampMs: number, body: string): Promise<string> {
  return hmacSha256Hex(secret, `${timestampMs}.${body}`);
}

export async function deliveryHeaders(event: string, secret: string, body: string, nowMs: number): Promise<Record<string, string>> {
  return headersWith(event, nowMs, await signDelivery(secret, nowMs, body));
}

/** Signs deliveries for one secret, the same bytes as signDelivery. */
export type DeliverySigner = (event: string, body: string, nowMs: number) => Promise<Record<string, string>>;

const encoder = new TextEncoder();
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/**
 * A signer that imports the secret as an HMAC key once, for every delivery of a batch to the same
 * secret: importing it again for each delivery cost as much as the signature itself. WebCrypto, so
 * the Node host and Deno sign alike.
 */
export async function createDeliverySigner(secret: string): Promise<DeliverySigner> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return async (event, body, nowMs) => {
    const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`${nowMs}.${body}`)));
    let hex = '';
    for (const b of mac) hex += HEX[b];
    return headersWith(event, nowMs, hex);
  };
}

function headersWith(event: string, nowMs: number, signature: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Sightline-Webhooks/1',
    'x-service-event': event,
    'x-service-timestamp': String(nowMs),
    'x-service-signature': signature,
  };
}
