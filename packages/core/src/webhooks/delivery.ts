import type { CoreDeps, VerbArgs } from '../context.ts';
import { describeNetworkError } from '../net/webhook-destination.ts';
import { deliveryHeaders } from './signing.ts';

/** Spec: 5 retried events per webhook URL per minute; first attempts are not capped. */
export const RETRIES_PER_URL_PER_MINUTE = 5;
/** Longer than the 10 s receiver timeout, so a live sender always records before a re-claim. */
const LEASE_SECONDS = 60;
/** Sends in flight at once from one claim batch. */
const SEND_CONCURRENCY = 64;

interface Claimed {
  event_id: string;
  event: string;
  body: string;
  attempt: number;
  url: string;
  secret_sealed: string;
}

export interface DeliveryReport {
  claimed: number;
  delivered: number;
  failed: number;
}

/**
 * Sends one claimed attempt and records it. 2xx is delivered; any other status, a timeout, a
 * refused destination or a connection error is a failed attempt. The body is the stored bytes,
 * unchanged on every attempt; only the timestamp header and the signature differ.
 */
async function sendOne(ctx: CoreDeps, c: Claimed, now: () => Date): Promise<boolean> {
  const started = performance.now();
  let status: number | null = null;
  let error: string | null = null;
  try {
    const secret = await ctx.keyring.open(c.secret_sealed);
    const headers = await deliveryHeaders(c.event, secret, c.body, Date.now());
    const res = await ctx.webhooks.request(c.url, { method: 'POST', headers, body: c.body, timeoutMs: ctx.webhookTimeoutMs });
    status = res.status;
    if (status < 200 || status > 299) error = `HTTP ${status}`;
  } catch (err) {
    error = describeNetworkError(err);
  }
  const duration = Math.round(performance.now() - started);
  await ctx.db`select sl_record_delivery(${c.event_id}, ${c.attempt}, ${now().toISOString()}::timestamptz,
                                         ${status}, ${error}, ${duration})`;
  return status !== null && status >= 200 && status <= 299;
}

async function sendAll(ctx: CoreDeps, claimed: Claimed[], now: () => Date): Promise<DeliveryReport> {
  let delivered = 0;
  let next = 0;
  const worker = async () => {
    while (next < claimed.length) {
      const c = claimed[next++];
      if (c && (await sendOne(ctx, c, now))) delivered++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, claimed.length) }, worker));
  return { claimed: claimed.length, delivered, failed: claimed.length - delivered };
}

async function claim(
  ctx: CoreDeps,
  opts: { now: Date; limit: number; partnerAccountId: string | null; firstOnly: boolean },
): Promise<Claimed[]> {
  return ctx.db<Claimed>`select * from sl_claim_deliveries(${opts.now.toISOString()}::timestamptz, ${opts.limit},
    ${opts.partnerAccountId}::uuid, ${opts.firstOnly}, ${RETRIES_PER_URL_PER_MINUTE}, ${LEASE_SECONDS})`;
}

/**
 * First attempts of a partner's new events, right after the action that emitted them committed.
 * Runs in the background (never delays or fails the action); first attempts are not capped.
 */
export async function dispatchNewEvents({ ctx, input }: VerbArgs<{ partnerAccountId: string }>): Promise<DeliveryReport> {
  const total: DeliveryReport = { claimed: 0, delivered: 0, failed: 0 };
  for (;;) {
    const claimed = await claim(ctx, { now: new Date(), limit: 200, partnerAccountId: input.partnerAccountId, firstOnly: true });
    if (!claimed.length) return total;
    const r = await sendAll(ctx, claimed, () => new Date());
    total.claimed += r.claimed;
    total.delivered += r.delivered;
    total.failed += r.failed;
  }
}

/**
 * The minute sweep: every due attempt — retries on their 1/5/30-minute schedule within the per-URL
 * cap, and first attempts a crashed process never sent — in bounded batches claimed with
 * SKIP LOCKED and a lease, so replicas never send the same claimed attempt twice.
 */
export async function sweepWebhookDeliveries({
  ctx,
  input,
}: VerbArgs<{ now?: Date; batchSize?: number; maxBatches?: number }>): Promise<DeliveryReport> {
  const now = input.now ?? new Date();
  const total: DeliveryReport = { claimed: 0, delivered: 0, failed: 0 };
  for (let i = 0; i < (input.maxBatches ?? 50); i++) {
    const claimed = await claim(ctx, { now, limit: input.batchSize ?? 500, partnerAccountId: null, firstOnly: false });
    if (!claimed.length) break;
    const r = await sendAll(ctx, claimed, () => (input.now ? now : new Date()));
    total.claimed += r.claimed;
    total.delivered += r.delivered;
    total.failed += r.failed;
  }
  return total;
}
