import type { CoreDeps, VerbArgs } from '../context.ts';
import { describeNetworkError, WEBHOOK_CONNECTION_WAIT_MS } from '../net/webhook-destination.ts';
import { deliveryHeaders } from './signing.ts';

/** Spec: 5 retried events per webhook URL per minute; first attempts are not capped. */
export const RETRIES_PER_URL_PER_MINUTE = 5;
/** Sends in flight at once from one claimed batch. */
const SEND_CONCURRENCY = 64;
/** Upper bound on one claim of first attempts right after an action (the lease may allow fewer). */
const FIRST_ATTEMPTS_PER_CLAIM = 200;
/** Upper bound on one claim of the sweep (the lease may allow fewer). */
const SWEEP_EVENTS_PER_CLAIM = 500;

/**
 * How long a claim holds and what an attempt may take of it. A claimed event is leased to its
 * sender (migration 0008); another replica may take it over only once the lease has run out.
 */
export interface DeliveryLease {
  /** How long a claim or a renewal holds, by the database's clock. */
  leaseMs: number;
  /**
   * What one attempt may take beyond the receiver's timeout: waiting for a connection in the
   * transport (bounded there, separately from the receiver's timer), opening the secret, signing,
   * and recording the outcome.
   */
  attemptSlackMs: number;
  /** Kept free at the end of every lease: clocks that tick at slightly different rates, a slow commit. */
  marginMs: number;
}

/**
 * Production: a 60 s lease, attempts of at most 10 s (receiver) + 30 s (the transport's bound on
 * waiting for a connection, WEBHOOK_CONNECTION_WAIT_MS) + 5 s (the rest), 5 s margin. With 64 sends
 * in flight that is floor((60 − 5) / 45) = 1 attempt per sender, so a claim takes at most 64 events
 * — as many as the transport keeps connections to one receiver, so one batch never queues behind
 * itself — and the whole batch finishes inside the first lease even if no renewal lands.
 */
export const DELIVERY_LEASE: DeliveryLease = { leaseMs: 60_000, attemptSlackMs: WEBHOOK_CONNECTION_WAIT_MS + 5_000, marginMs: 5_000 };

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
  /** Attempts recorded as delivered (2xx). */
  delivered: number;
  /** Attempts recorded as failed (they count towards the event's four). */
  failed: number;
  /**
   * Claimed events this sender left to a later claim without recording an attempt: given back unsent
   * because the lease was running short, taken over by another sender, or (rarely) sent after the
   * lease was taken over, whose record the database then refused.
   */
  released: number;
}

/** What a lease allows, worked out once per sweep or dispatch. */
interface LeasePlan {
  lease: DeliveryLease;
  /** The worst case of one attempt: the receiver's timeout plus the slack around it. */
  attemptMs: number;
  /** SEND_CONCURRENCY × the attempts in a row that fit in the lease before its margin. */
  claimSize: number;
  /**
   * Four times a lease: a lease never drops below ¾ while renewals land, and one failed renewal
   * still leaves half a lease (30 s, more than an attempt and its margin) before the next.
   */
  renewEveryMs: number;
}

function planFor(ctx: CoreDeps, lease: DeliveryLease): LeasePlan {
  const attemptMs = ctx.webhookTimeoutMs + lease.attemptSlackMs;
  const inARow = Math.floor((lease.leaseMs - lease.marginMs) / attemptMs);
  if (inARow < 1) {
    throw new Error(`a ${lease.leaseMs} ms webhook lease cannot hold one ${attemptMs} ms attempt and its ${lease.marginMs} ms margin`);
  }
  return { lease, attemptMs, claimSize: SEND_CONCURRENCY * inARow, renewEveryMs: lease.leaseMs / 4 };
}

/**
 * One claimed batch and what its sender knows of its lease. `heldUntil` is on this process's
 * monotonic clock and never later than the database's lease: it is the moment the claim or renewal
 * was asked for plus the lease, and the database started the lease after that moment. Only
 * durations cross between the two clocks, so a skewed host clock changes nothing.
 */
interface Batch {
  owner: string;
  claimed: Claimed[];
  heldUntil: number;
  /** Events the database last confirmed this owner holds (all of them, at the claim). */
  held: Set<string>;
}

const emptyReport = (): DeliveryReport => ({ claimed: 0, delivered: 0, failed: 0, released: 0 });

function add(total: DeliveryReport, r: DeliveryReport): void {
  total.claimed += r.claimed;
  total.delivered += r.delivered;
  total.failed += r.failed;
  total.released += r.released;
}

/**
 * Sends one claimed attempt and records it. 2xx is delivered; any other status, a timeout, a
 * refused destination or a connection error is a failed attempt. The body is the stored bytes,
 * unchanged on every attempt; only the timestamp header and the signature differ. `recordAt` null
 * records at the database's clock.
 */
async function sendOne(ctx: CoreDeps, owner: string, c: Claimed, recordAt: Date | null): Promise<'delivered' | 'failed' | 'refused'> {
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
  const [row] = await ctx.db<{ status: string | null }>`
    select sl_record_delivery(${c.event_id}, ${c.attempt}, ${owner}::uuid, ${recordAt?.toISOString() ?? null}::timestamptz,
                              ${status}, ${error}, ${duration}) as status`;
  if (!row?.status) {
    // Only possible when this sender's lease ran out and another took the event over: theirs is
    // the attempt that counts, and the receiver may see this one as a duplicate.
    ctx.log.warn('webhook attempt not recorded: its lease was taken over', { event_id: c.event_id, attempt: c.attempt });
    return 'refused';
  }
  return status !== null && status >= 200 && status <= 299 ? 'delivered' : 'failed';
}

/**
 * Renews the batch's lease every `renewEveryMs` until stopped, and keeps `held` and `heldUntil` to
 * what the database confirmed. A failed renewal is logged and leaves both as they were, so the
 * sender's check before each send stops it in time.
 */
function renewWhileSending(ctx: CoreDeps, plan: LeasePlan, batch: Batch): { stop(): Promise<void> } {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    for (;;) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, plan.renewEveryMs);
      });
      if (stopped) return;
      const askedAt = performance.now();
      try {
        const rows = await ctx.db<{ event_id: string }>`select event_id from sl_renew_deliveries(${batch.owner}::uuid, ${plan.lease.leaseMs})`;
        batch.held = new Set(rows.map((r) => r.event_id));
        batch.heldUntil = askedAt + plan.lease.leaseMs;
      } catch (err) {
        ctx.log.warn('webhook lease renewal failed', { owner: batch.owner, error: err instanceof Error ? err.message : String(err) });
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}

/**
 * Sends a claimed batch, SEND_CONCURRENCY at a time, and never sends an event late: before each send
 * the sender checks that it still holds the event and that its lease has room for a whole attempt
 * plus the margin. If not, it stops taking events, and gives back what it did not send
 * (sl_release_deliveries: no attempt counted) for a later claim, rather than send it after another
 * replica may have claimed it. The claim size makes that check pass for a whole batch of attempts
 * that keep to their bound; the renewal keeps it passing for a live sender whose attempts do not.
 */
async function sendBatch(ctx: CoreDeps, plan: LeasePlan, batch: Batch, recordAt: Date | null): Promise<DeliveryReport> {
  const report: DeliveryReport = { ...emptyReport(), claimed: batch.claimed.length };
  const unsent: string[] = [];
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped) {
      const c = batch.claimed[next++];
      if (!c) return;
      if (!batch.held.has(c.event_id)) {
        unsent.push(c.event_id);
        continue;
      }
      if (batch.heldUntil - performance.now() < plan.attemptMs + plan.lease.marginMs) {
        // Synchronous with taking `c`: no other worker takes an event after this one.
        stopped = true;
        unsent.push(...batch.claimed.slice(next - 1).map((x) => x.event_id));
        return;
      }
      const outcome = await sendOne(ctx, batch.owner, c, recordAt);
      if (outcome === 'refused') report.released++;
      else report[outcome]++;
    }
  };
  const renewal = renewWhileSending(ctx, plan, batch);
  try {
    await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, batch.claimed.length) }, worker));
  } finally {
    await renewal.stop();
  }
  if (unsent.length) {
    // Also the events taken over: the release changes only rows this owner still holds.
    await ctx.db`select sl_release_deliveries(${batch.owner}::uuid, ${`{${unsent.join(',')}}`}::uuid[])`;
    report.released += unsent.length;
    ctx.log.warn('webhook events left unsent: lease running short or taken over', { owner: batch.owner, released: unsent.length });
  }
  return report;
}

/** Claims a batch for a fresh owner id. `now` null is the database's clock (leases always are). */
async function claim(
  ctx: CoreDeps,
  plan: LeasePlan,
  opts: { now: Date | null; limit: number; partnerAccountId: string | null; firstOnly: boolean },
): Promise<Batch> {
  const owner = crypto.randomUUID();
  const askedAt = performance.now();
  const claimed = await ctx.db<Claimed>`
    select * from sl_claim_deliveries(${owner}::uuid, ${opts.now?.toISOString() ?? null}::timestamptz, ${opts.limit},
      ${opts.partnerAccountId}::uuid, ${opts.firstOnly}, ${RETRIES_PER_URL_PER_MINUTE}, ${plan.lease.leaseMs})`;
  return { owner, claimed, heldUntil: askedAt + plan.lease.leaseMs, held: new Set(claimed.map((c) => c.event_id)) };
}

/**
 * First attempts of a partner's new events, right after the action that emitted them committed.
 * Runs in the background (never delays or fails the action); first attempts are not capped. Each
 * claim is sized so its batch finishes within its lease (DELIVERY_LEASE), so no replica sends the
 * same attempt while this one is alive. `lease` exists for tests that scale time down.
 */
export async function dispatchNewEvents({ ctx, input }: VerbArgs<{ partnerAccountId: string; lease?: DeliveryLease }>): Promise<DeliveryReport> {
  const plan = planFor(ctx, input.lease ?? DELIVERY_LEASE);
  const limit = Math.min(FIRST_ATTEMPTS_PER_CLAIM, plan.claimSize);
  const total = emptyReport();
  for (;;) {
    const batch = await claim(ctx, plan, { now: null, limit, partnerAccountId: input.partnerAccountId, firstOnly: true });
    if (!batch.claimed.length) return total;
    add(total, await sendBatch(ctx, plan, batch, null));
  }
}

/**
 * The minute sweep: every due attempt — retries on their 1/5/30-minute schedule within the per-URL
 * cap, and first attempts a crashed process never sent — in bounded batches claimed with SKIP LOCKED
 * and a lease that a live sender never loses: each claim is sized to finish within its lease, renewed
 * while it sends, and an event whose lease runs short is given back unsent, so replicas never send
 * the same claimed attempt twice. `now` pins the schedule's clock (tests); leases always run on the
 * database's clock. `lease` exists for tests that scale time down.
 */
export async function sweepWebhookDeliveries({
  ctx,
  input,
}: VerbArgs<{ now?: Date; batchSize?: number; maxBatches?: number; lease?: DeliveryLease }>): Promise<DeliveryReport> {
  const plan = planFor(ctx, input.lease ?? DELIVERY_LEASE);
  const limit = Math.min(input.batchSize ?? SWEEP_EVENTS_PER_CLAIM, plan.claimSize);
  const total = emptyReport();
  for (let i = 0; i < (input.maxBatches ?? 50); i++) {
    const batch = await claim(ctx, plan, { now: input.now ?? null, limit, partnerAccountId: null, firstOnly: false });
    if (!batch.claimed.length) break;
    add(total, await sendBatch(ctx, plan, batch, input.now ?? null));
  }
  return total;
}
