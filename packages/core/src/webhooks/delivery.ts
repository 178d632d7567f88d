import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { describeNetworkError, WEBHOOK_CONNECTION_WAIT_MS } from '../kernel/net/webhook-destination.ts';
import { integrationOf, sendToIntegration } from './send-to-integration.ts';
import { createDeliverySigner, type DeliverySigner } from './signing.ts';

/** Spec: 5 retried events per webhook URL per minute; first attempts are not capped. */
export const RETRIES_PER_URL_PER_MINUTE = 5;
/** Sends in flight at once from one claimed batch. */
const SEND_CONCURRENCY = 64;
/**
 * Lanes a dispatch or sweep works in, each with at most one claimed batch on the wire. With one
 * batch at a time the receiver sat idle while each batch's slowest answer, its records and the next
 * claim went by; with two lanes (each claiming its next batch while the current one is out, when
 * rounds are quick: LeasePlan.claimAheadWithinMs) a batch is nearly always on the wire. The lanes
 * share the transport's connections to a receiver (64 per origin), so a send may queue behind the
 * other lane's: at most one round of answers, 10 s, within the transport's bound on waiting for a
 * connection (WEBHOOK_CONNECTION_WAIT_MS, 30 s), which the lease's attempt budget includes. A third
 * lane would make that two rounds behind, and a slow receiver could then fail sends in our own queue.
 */
const BATCHES_IN_FLIGHT = 2;
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
 * itself (only behind the other batch in flight, BATCHES_IN_FLIGHT) — and the whole batch finishes
 * inside the first lease even if no renewal lands.
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
  /**
   * A lane claims its next batch while the current one is on the wire only if its last round of
   * sends took less than this: half of what a lease holds beyond an attempt and its margin (5 s in
   * production), so the batch claimed early is still sendable when the round ends. Slower rounds
   * (a slow receiver) claim after them, as a single sender would.
   */
  claimAheadWithinMs: number;
}

function planFor(ctx: CoreDeps, lease: DeliveryLease): LeasePlan {
  const attemptMs = ctx.webhookTimeoutMs + lease.attemptSlackMs;
  const inARow = Math.floor((lease.leaseMs - lease.marginMs) / attemptMs);
  if (inARow < 1) {
    throw new Error(`a ${lease.leaseMs} ms webhook lease cannot hold one ${attemptMs} ms attempt and its ${lease.marginMs} ms margin`);
  }
  return {
    lease,
    attemptMs,
    claimSize: SEND_CONCURRENCY * inARow,
    renewEveryMs: lease.leaseMs / 4,
    claimAheadWithinMs: (lease.leaseMs - attemptMs - lease.marginMs) / 2,
  };
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

/** One attempt's outcome, waiting to be recorded. */
interface Outcome {
  c: Claimed;
  owner: string;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** An integration's delivery: when the destination asked to be retried (Retry-After). */
  retryAfterMs?: number;
  /** An integration's delivery that retrying cannot mend (a revoked token, an archived channel). */
  permanent?: boolean;
  /** An integration's delivery: the CRM's id of the company it was pushed to. */
  externalId?: string;
  done: (status: string | null) => void;
  fail: (err: unknown) => void;
}

/** Outcomes written by one statement at most; a write starts as soon as this many wait. */
const RECORDS_PER_WRITE = SEND_CONCURRENCY;
/** The longest an outcome waits for others to share its write. */
const RECORD_GATHER_MS = 20;

/**
 * Records attempts as they finish, many to one statement (sl_record_deliveries): an outcome waits
 * up to RECORD_GATHER_MS, or until RECORDS_PER_WRITE wait, and one statement writes them all. Per
 * attempt, that was a statement and a commit each: a round trip per send on Postgres, and on the
 * embedded database a fixed cost (~1.4 ms of this thread) per statement whatever its size. Nobody
 * sends faster for it: a lane goes on while its records are written, and only the batch's lease
 * renewal waits for them. Each outcome learns its own result: the event's status after the record,
 * or null when its lease was taken over and nothing was recorded.
 */
function createRecorder(ctx: CoreDeps, recordAt: Date | null) {
  let waiting: Outcome[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> | undefined;
  const write = async (batch: Outcome[]) => {
    try {
      const rows = await ctx.db<{ event_id: string; delivery_status: string | null }>`
        select event_id, delivery_status from sl_record_deliveries(${recordAt?.toISOString() ?? null}::timestamptz, ${JSON.stringify(
          batch.map((o) => ({
            event_id: o.c.event_id,
            owner: o.owner,
            attempt: o.c.attempt,
            status_code: o.status,
            error: o.error,
            duration_ms: o.durationMs,
            retry_after_ms: o.retryAfterMs ?? null,
            permanent: o.permanent ?? false,
            external_id: o.externalId ?? null,
          })),
        )}::text::jsonb)`;
      const status = new Map(rows.map((r) => [r.event_id, r.delivery_status]));
      for (const o of batch) o.done(status.get(o.c.event_id) ?? null);
    } catch (err) {
      for (const o of batch) o.fail(err);
    }
  };
  // One write at a time, in order; what gathers meanwhile goes in the next.
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = [];
    writing = (writing ?? Promise.resolve()).then(() => write(batch));
  };
  return {
    record(o: Omit<Outcome, 'done' | 'fail'>): Promise<string | null> {
      return new Promise((done, fail) => {
        waiting.push({ ...o, done, fail });
        if (waiting.length >= RECORDS_PER_WRITE) flush();
        else timer ??= setTimeout(flush, RECORD_GATHER_MS);
      });
    },
  };
}
type Recorder = ReturnType<typeof createRecorder>;

/** What one dispatch or sweep shares across its batches. */
interface Run {
  recorder: Recorder;
  /**
   * A signer per sealed secret, as each claim returns it: opening the secret and importing it as an
   * HMAC key happen once per destination and run, not once per delivery. A rotated secret is another
   * sealed value, and gets its own.
   */
  signers: Map<string, Promise<DeliverySigner>>;
  /** Integrations' secrets (webhook URLs, tokens), opened once per destination and run. */
  opened: Map<string, Promise<string>>;
}

function signerFor(ctx: CoreDeps, run: Run, sealed: string): Promise<DeliverySigner> {
  return perSecret(run.signers, sealed, () => ctx.keyring.open(sealed).then(createDeliverySigner));
}

/**
 * One promise per sealed secret and run, made on first use. A secret that will not open fails each
 * of its attempts, as before; the rejection is theirs, so the kept promise's own is handled here.
 */
function perSecret<T>(cache: Map<string, Promise<T>>, sealed: string, make: () => Promise<T>): Promise<T> {
  let kept = cache.get(sealed);
  if (!kept) {
    kept = make();
    kept.catch(() => undefined);
    cache.set(sealed, kept);
  }
  return kept;
}

/** What one attempt came to, before it is recorded. */
interface Attempted {
  status: number | null;
  error: string | null;
  durationMs: number;
  retryAfterMs?: number;
  permanent?: boolean;
  externalId?: string;
}

/** An integration's secret (its chat URL or token), opened once per run, as the signers are. */
function openedFor(ctx: CoreDeps, run: Run, sealed: string): Promise<string> {
  return perSecret(run.opened, sealed, () => ctx.keyring.open(sealed));
}

/**
 * An integration's delivery: the adapter formats the stored signal for its destination and sends
 * it. Delivered when the destination took it; otherwise failed, with the destination's Retry-After
 * and whether retrying can help, for the record. The HTTP status stands for the outcome in the
 * attempt log (200 delivered; the vendor's status, or none, otherwise).
 */
async function attemptIntegration(
  ctx: CoreDeps,
  run: Run,
  c: Claimed,
  target: NonNullable<ReturnType<typeof integrationOf>>,
): Promise<Omit<Attempted, 'durationMs'>> {
  try {
    const secret = await openedFor(ctx, run, c.secret_sealed);
    const outcome = await sendToIntegration(ctx, target.kind, secret, c.event_id, c.body);
    if (outcome.ok) return { status: 200, error: null, ...(outcome.externalId ? { externalId: outcome.externalId } : {}) };
    return {
      status: outcome.status ?? null,
      error: outcome.error,
      permanent: !outcome.retryable,
      ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
    };
  } catch (err) {
    return { status: null, error: describeNetworkError(err) };
  }
}

/**
 * Sends one claimed attempt. 2xx is delivered; any other status, a timeout, a refused destination
 * or a connection error is a failed attempt. The body is the stored bytes, unchanged on every
 * attempt; only the timestamp header and the signature differ.
 */
async function attempt(ctx: CoreDeps, run: Run, c: Claimed): Promise<Attempted> {
  const started = performance.now();
  const integration = integrationOf(c.url);
  if (integration) return { ...(await attemptIntegration(ctx, run, c, integration)), durationMs: Math.round(performance.now() - started) };
  let status: number | null = null;
  let error: string | null = null;
  try {
    const sign = await signerFor(ctx, run, c.secret_sealed);
    const headers = await sign(c.event, c.body, Date.now());
    const res = await ctx.webhooks.request(c.url, { method: 'POST', headers, body: c.body, timeoutMs: ctx.webhookTimeoutMs });
    status = res.status;
    if (status < 200 || status > 299) error = `HTTP ${status}`;
  } catch (err) {
    error = describeNetworkError(err);
  }
  return { status, error, durationMs: Math.round(performance.now() - started) };
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

/** A batch under way: `sent` once its sender has stopped sending (it never rejects), `settled` once all is recorded. */
interface Sending {
  sent: Promise<void>;
  settled: Promise<DeliveryReport>;
}

/**
 * Sends a claimed batch, SEND_CONCURRENCY at a time, and never sends an event late: before each send
 * the sender checks that it still holds the event and that its lease has room for a whole attempt
 * plus the margin. If not, it stops taking events, and gives back what it did not send
 * (sl_release_deliveries: no attempt counted) for a later claim, rather than send it after another
 * replica may have claimed it. The claim size makes that check pass for a whole batch of attempts
 * that keep to their bound; the renewal keeps it passing for a live sender whose attempts do not.
 * Each attempt goes to the recorder as soon as it is answered, and the lease is renewed until the
 * last record is in: a record lands inside the lease, as the attempt's slack allows for.
 */
function sendBatch(ctx: CoreDeps, plan: LeasePlan, run: Run, batch: Batch): Sending {
  const report: DeliveryReport = { ...emptyReport(), claimed: batch.claimed.length };
  const unsent: string[] = [];
  const records: Promise<void>[] = [];
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
      const outcome = await attempt(ctx, run, c);
      records.push(
        run.recorder.record({ c, owner: batch.owner, ...outcome }).then((status) => {
          if (status === 'delivered') report.delivered++;
          else if (status !== null) report.failed++;
          else {
            // Only possible when this sender's lease ran out and another took the event over: theirs
            // is the attempt that counts, and the receiver may see this one as a duplicate.
            report.released++;
            ctx.log.warn('webhook attempt not recorded: its lease was taken over', { event_id: c.event_id, attempt: c.attempt });
          }
        }),
      );
    }
  };
  const renewal = renewWhileSending(ctx, plan, batch);
  const sent = Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, batch.claimed.length) }, worker)).then(() => undefined);
  const settled = (async () => {
    try {
      await sent;
      await Promise.all(records);
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
  })();
  return { sent, settled };
}

interface ClaimOptions {
  /** The schedule's clock; null is the database's (leases always are). */
  now: Date | null;
  limit: number;
  partnerAccountId: string | null;
  firstOnly: boolean;
}

/** Claims a batch for a fresh owner id. */
async function claim(ctx: CoreDeps, plan: LeasePlan, opts: ClaimOptions): Promise<Batch> {
  const owner = crypto.randomUUID();
  const askedAt = performance.now();
  const claimed = await ctx.db<Claimed>`
    select * from sl_claim_deliveries(${owner}::uuid, ${opts.now?.toISOString() ?? null}::timestamptz, ${opts.limit},
      ${opts.partnerAccountId}::uuid, ${opts.firstOnly}, ${RETRIES_PER_URL_PER_MINUTE}, ${plan.lease.leaseMs})`;
  return { owner, claimed, heldUntil: askedAt + plan.lease.leaseMs, held: new Set(claimed.map((c) => c.event_id)) };
}

/**
 * Claims and sends batches until a claim comes back empty or `maxBatches` were claimed, with
 * BATCHES_IN_FLIGHT lanes on the wire at once. A lane's next claim overlaps its current round of
 * sends when rounds are quick (LeasePlan.claimAheadWithinMs), and otherwise follows it; records are
 * written while the lane goes on. Each batch keeps its own lease, renewal and give-back
 * (sendBatch); they share the recorder and the opened secrets. A failure (the database) stops
 * further claims, lets what is under way finish, and is thrown.
 */
async function deliver(ctx: CoreDeps, plan: LeasePlan, opts: ClaimOptions & { maxBatches: number }): Promise<DeliveryReport> {
  const run: Run = { recorder: createRecorder(ctx, opts.now), signers: new Map(), opened: new Map() };
  const total = emptyReport();
  const settling: Promise<void>[] = [];
  let claims = 0;
  let exhausted = false;
  let failure: { err: unknown } | undefined;
  const fail = (err: unknown) => {
    failure ??= { err };
  };
  const nextClaim = (): Promise<Batch | undefined> | undefined => {
    if (exhausted || failure || claims >= opts.maxBatches) return undefined;
    claims++;
    return claim(ctx, plan, opts).catch((err: unknown) => {
      fail(err);
      return undefined;
    });
  };
  const lane = async () => {
    let lastRoundMs = Number.POSITIVE_INFINITY;
    let next = nextClaim();
    while (next) {
      const batch = await next;
      if (!batch) return;
      if (!batch.claimed.length) {
        exhausted = true;
        return;
      }
      const started = performance.now();
      const sending = sendBatch(ctx, plan, run, batch);
      settling.push(sending.settled.then((r) => add(total, r), fail));
      next = lastRoundMs < plan.claimAheadWithinMs ? nextClaim() : undefined;
      await sending.sent;
      lastRoundMs = performance.now() - started;
      next ??= nextClaim();
    }
  };
  await Promise.all(Array.from({ length: BATCHES_IN_FLIGHT }, lane));
  await Promise.all(settling);
  if (failure) throw failure.err;
  return total;
}

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** First attempts of a partner's new events (dispatchNewEvents), after the commit that wrote them to the outbox. */
    'webhook-delivery': { partnerAccountId: string };
  }
}

/**
 * First attempts of a partner's new events, right after the action that emitted them committed.
 * Started as after-work (`webhook-delivery`: never delays or fails the action); first attempts are not capped. Each
 * claim is sized so its batch finishes within its lease (DELIVERY_LEASE), so no replica sends the
 * same attempt while this one is alive. `lease` exists for tests that scale time down.
 */
export async function dispatchNewEvents({ ctx, input }: VerbArgs<{ partnerAccountId: string; lease?: DeliveryLease }>): Promise<DeliveryReport> {
  const plan = planFor(ctx, input.lease ?? DELIVERY_LEASE);
  const limit = Math.min(FIRST_ATTEMPTS_PER_CLAIM, plan.claimSize);
  return deliver(ctx, plan, { now: null, limit, partnerAccountId: input.partnerAccountId, firstOnly: true, maxBatches: Number.POSITIVE_INFINITY });
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
  // The digests of days that have ended become deliveries first, so this run sends them.
  await ctx.db`select sl_write_integration_digests(${input.now?.toISOString() ?? null}::timestamptz)`;
  return deliver(ctx, plan, { now: input.now ?? null, limit, partnerAccountId: null, firstOnly: false, maxBatches: input.maxBatches ?? 50 });
}
