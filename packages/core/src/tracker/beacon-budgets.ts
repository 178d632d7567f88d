import { createWriteBehind, type WriteBehind } from '../drivers/write-behind.ts';
import { type BatchedRead, createBatchedRead } from '../kernel/batched-read.ts';
import type { CoreDeps } from '../kernel/context.ts';
import { BoundedLru } from '../kernel/lru.ts';
import { clientLimitKey } from '../kernel/net/ip.ts';

/**
 * collect's budgets: what one client, and many clients together, may make a tracker store and
 * identify per minute. A tracking id is public (it is in every page of the site), so without them
 * whoever reads it can empty the owner's IDs: one beacon from each of many business addresses is
 * an identification each.
 *
 * - **Per address**: every beacon, bots' too, counts against its client address (an IPv6 /64,
 *   which one subscriber holds whole), across every tracker. Stops one client's flood before any
 *   database work.
 * - **Per website, new visitors only**: a beacon from an address the website has no
 *   identification for in this period (a new visitor: it may use an ID) counts against the
 *   website. Beacons of returning visitors, bots and a suspended child's visitors (never
 *   identified) never do, so a busy site's real traffic is not refused; what many addresses can
 *   make the worker identify is bounded by the budget a minute.
 *
 * A beacon over a budget is dropped, answered like any other (202), and counted by reason in
 * `tracker_filtered_daily` (migration 0031).
 */
export type FilterReason = 'address_budget' | 'website_budget';

/** The beacon collect is about to append, as the budgets see it. */
export interface BudgetedBeacon {
  trackingScriptId: string;
  pageHost: string;
  /** The host of the browser's Origin (or Referer), when it sent one. */
  originHost: string | null;
  ip: string;
  isBot: boolean;
}

/** `admit`: go on and append; `dropped`: the tracker would not take it anyway; or the budget that refused it. */
export type BudgetVerdict = 'admit' | 'dropped' | FilterReason;

/** The key an address is budgeted under: the client's (net/ip.ts), or the text itself if it is none. */
export function addressBudgetKey(ip: string): string {
  return clientLimitKey(ip) ?? ip;
}

/** Whether an address would be stored for the website, and whether it is a new visitor there. */
interface VisitorStatus {
  accepted: boolean;
  candidate: boolean;
}

/**
 * How long an address the website already identified this period is taken as not new without
 * asking again. At a period's rollover such an address is new again in the database; for at most
 * this long its beacons are admitted without counting against the website (a real visitor's).
 */
const KNOWN_VISITOR_TTL_MS = 10 * 60_000;
const KNOWN_VISITORS_MAX = 100_000;

interface Budgeting {
  status: BatchedRead<string, VisitorStatus>;
  known: BoundedLru<number>;
  filtered: WriteBehind<FilteredCount>;
}

interface FilteredCount {
  tracking_script_id: string;
  reason: FilterReason;
  beacons: number;
}

const budgeting = new WeakMap<CoreDeps, Budgeting>();

function budgetingOf(ctx: CoreDeps): Budgeting {
  let b = budgeting.get(ctx);
  if (!b) {
    b = {
      // Batched: under load, the reads of one round trip share one statement.
      status: createBatchedRead({ read: (keys) => readVisitorStatus(ctx, keys) }),
      known: new BoundedLru(KNOWN_VISITORS_MAX),
      filtered: createWriteBehind<FilteredCount>(
        { log: ctx.log, background: ctx.background },
        {
          name: 'tracker-filtered',
          merge: (into, item) => {
            into.beacons += item.beacons;
          },
          write: (batch) => ctx.db`select sl_record_tracker_filtered(${JSON.stringify(batch)}::text::jsonb)`,
          // Keys are tracking ids as sent, unchecked: a flood of made-up ids must not grow this.
          maxPending: 10_000,
        },
      ),
    };
    budgeting.set(ctx, b);
  }
  return b;
}

/** One statement for a batch of status reads (sl_tracker_visitor_status, migration 0031). */
async function readVisitorStatus(ctx: CoreDeps, keys: string[]): Promise<Map<string, VisitorStatus>> {
  const beacons = keys.map((key, n) => {
    const [tracking_script_id, page_host, origin_host, ip] = JSON.parse(key) as [string, string, string | null, string];
    return { n, tracking_script_id, page_host, origin_host, ip };
  });
  const rows = await ctx.db<{ n: number; accepted: boolean; candidate: boolean }>`
    select n, accepted, candidate from sl_tracker_visitor_status(${JSON.stringify(beacons)}::text::jsonb)`;
  const found = new Map<string, VisitorStatus>();
  for (const r of rows) {
    const key = keys[r.n];
    if (key !== undefined) found.set(key, { accepted: r.accepted, candidate: r.candidate });
  }
  return found;
}

/**
 * Spends the beacon's budgets, or says which one refused it (and counts it under that reason). The
 * per-address budget comes first and costs no database work; the per-website one is asked only for
 * a new visitor's beacon, which is what may use an ID.
 */
export async function spendBeaconBudgets(ctx: CoreDeps, beacon: BudgetedBeacon): Promise<BudgetVerdict> {
  const b = budgetingOf(ctx);
  if (!(await ctx.trackerBudgets.perAddress.hit(addressBudgetKey(beacon.ip))).allowed) {
    countFiltered(b, beacon.trackingScriptId, 'address_budget');
    return 'address_budget';
  }
  // A bot's beacon is never identified: nothing for the website's budget to guard.
  if (beacon.isBot) return 'admit';
  const knownKey = `${beacon.trackingScriptId}|${beacon.ip}`;
  const knownUntil = b.known.get(knownKey);
  if (knownUntil !== undefined && knownUntil > Date.now()) return 'admit';
  const status = await b.status(JSON.stringify([beacon.trackingScriptId, beacon.pageHost, beacon.originHost, beacon.ip]));
  if (!status?.accepted) return 'dropped';
  if (!status.candidate) {
    b.known.set(knownKey, Date.now() + KNOWN_VISITOR_TTL_MS);
    return 'admit';
  }
  if (!(await ctx.trackerBudgets.newVisitorsPerWebsite.hit(beacon.trackingScriptId)).allowed) {
    countFiltered(b, beacon.trackingScriptId, 'website_budget');
    return 'website_budget';
  }
  return 'admit';
}

function countFiltered(b: Budgeting, trackingScriptId: string, reason: FilterReason): void {
  b.filtered.add(`${trackingScriptId}|${reason}`, { tracking_script_id: trackingScriptId, reason, beacons: 1 });
}

/** Writes the filtered counts gathered so far in this process (a reader of them calls this first). */
export async function flushFilteredBeacons(ctx: CoreDeps): Promise<void> {
  await budgeting.get(ctx)?.filtered.flush();
}
