import { hmacSha256Hex } from '../crypto.ts';

/**
 * The spec's signing scheme: X-Service-Signature = hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed
 * with the webhook secret, where <timestamp> is X-Service-Timestamp (unix milliseconds at dispatch).
 */
export async function signDelivery(secret: string, timestampMs: number, body: string): Promise<string> {
  return hmacSha256Hex(secret, `${timestampMs}.${body}`);
}

export async function deliveryHeaders(event: string, secret: string, body: string, nowMs: number): Promise<Record<string, string>> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Sightline-Webhooks/1',
    'x-service-event': event,
    'x-service-timestamp': String(nowMs),
    'x-service-signature': await signDelivery(secret, nowMs, body),
  };
}
