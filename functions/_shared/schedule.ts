import { z } from '@hono/zod-openapi';
import { type CoreDeps, rollOverDuePeriods, sweepDataLifecycle, sweepWebhookDeliveries, workIcpQueue, workTrackerQueue } from '@sightline/core';

/**
 * One row per scheduled sweep: its name, the verb it runs, how often, what it needs and what it
 * reports. From this table come the Node host's timers (packages/host/src/main.ts), the sweep
 * functions the Supabase scheduler calls (functions/sweep-<name>/), and the cron SQL that schedules
 * them (`cronSql`, shown in docs/deploy-supabase.md and held to it by tests/schedule.test.ts).
 *
 * Two cadences where they differ on purpose: on Node a timer costs nothing, so the tracker worker's
 * catch-up runs every 5 s; on Supabase every run is a paid invocation and the worker is already
 * started after each beacon, so the cron runs it each minute.
 */
export interface Sweep<T extends z.ZodRawShape = z.ZodRawShape> {
  /** The sweep's name: the Node job's, and the `sweep` field of the function's answer. */
  sweep: string;
  /** What it does, and how often (the function's OpenAPI summary). */
  summary: string;
  description: string;
  /** How often the Node host runs it. */
  nodeEverySeconds: number;
  /** When Supabase Cron calls its function (pg_cron syntax). */
  cron: string;
  /** It identifies IPs: the Supabase function ships the local IP data. */
  usesIpData?: boolean;
  /** Its report, and the report's name in the OpenAPI document. */
  result: z.ZodObject<T>;
  resultName: string;
  run(deps: CoreDeps): Promise<z.infer<z.ZodObject<T>>>;
}

const int = () => z.number().int();

/** Identity, typed: keeps each row's result schema tied to its verb's report. */
const sweep = <T extends z.ZodRawShape>(s: Sweep<T>): Sweep<T> => s;

export const periodRollover = sweep({
  sweep: 'period-rollover',
  summary: 'Scheduled (hourly): roll over every period whose end has passed',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; idempotent, so a second run finds nothing due.',
  nodeEverySeconds: 3600,
  cron: '0 * * * *',
  result: z.object({ children: int(), pools: int() }),
  resultName: 'PeriodRolloverResult',
  run: (deps) => rollOverDuePeriods({ ctx: deps, input: {} }),
});

export const dataLifecycle = sweep({
  sweep: 'data-lifecycle',
  summary:
    'Scheduled (hourly): make tracker-event partitions ahead, drop those past retention, end visitor sessions opened before it, delete ended webhook events, expired cached lookups, ended connect links and old idempotency outcomes, and remove the addresses and people of visitors not seen for the personal-data period',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token; idempotent, so a second run finds nothing due. Each deletion runs in bounded batches claimed with SKIP LOCKED, so replicas share it and no batch holds a long lock. The periods are TRACKER_EVENT_RETENTION_DAYS, WEBHOOK_EVENT_RETENTION_DAYS, CONNECT_LINK_RETENTION_DAYS and PERSONAL_DATA_RETENTION_MONTHS (docs/operating.md, "Data lifecycle").',
  nodeEverySeconds: 3600,
  cron: '30 * * * *',
  result: z.object({
    tracker_events: z.object({ partitions_made: int(), partitions_dropped: int(), default_rows: int() }),
    visitor_sessions: int(),
    events: int(),
    ip_cache: int(),
    connect_links: int(),
    idempotent_requests: int(),
    aged: z.object({
      visitors: int(),
      visitor_sessions: int(),
      identifications: int(),
      individuals: int(),
      search_labels: int(),
      api_lookups: int(),
      credit_transactions: int(),
    }),
  }),
  resultName: 'DataLifecycleSweepResult',
  run: (deps) => sweepDataLifecycle({ ctx: deps, input: {} }),
});

export const webhookDeliveries = sweep({
  sweep: 'webhook-deliveries',
  summary: 'Scheduled (every minute): send due webhook retries and first attempts a crashed process never sent',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through leased claims.',
  nodeEverySeconds: 60,
  cron: '* * * * *',
  result: z.object({ claimed: int(), delivered: int(), failed: int(), released: int() }),
  resultName: 'DeliverySweepResult',
  run: (deps) => sweepWebhookDeliveries({ ctx: deps, input: {} }),
});

export const trackerEvents = sweep({
  sweep: 'tracker-events',
  summary: 'Scheduled (every minute): apply waiting tracker events to their visitors, then identify the visitors waiting',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through claims taken with SKIP LOCKED, an event counts once, and an identification uses at most one ID.',
  // Collect starts the worker after each beacon; this catches what a dead run left behind.
  nodeEverySeconds: 5,
  cron: '* * * * *',
  usesIpData: true,
  result: z.object({
    visits: z.object({ applied: int(), claims: int() }),
    identifications: z.object({ identified: int(), failed: int(), dropped: int(), retried: int(), claims: int() }),
  }),
  resultName: 'TrackerEventsSweepResult',
  run: (deps) => workTrackerQueue({ ctx: deps, input: {} }),
});

export const icpWork = sweep({
  sweep: 'icp-work',
  summary:
    'Scheduled (every minute): draft the ICPs waiting for generation, score identifications against active ICPs, give back the expired credit holds of api-full-request',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token. Generation retries failed attempts when due and takes over the work of a worker that died; scoring scores the identifications that landed and catches up ICPs activated since. Replicas share both through leased or SKIP LOCKED claims. Credits an api-full-request worker held and never settled or released (it died) go back to the account once the hold expires.',
  // Creates, activations and settled identifications start the work; this retries and catches up.
  nodeEverySeconds: 60,
  cron: '* * * * *',
  result: z.object({
    generation: z.object({ generated: int(), retrying: int(), failed: int(), claims: int() }),
    scoring: z.object({ scored: int(), backfilled: int(), scores: int(), batches: int() }),
    credit_holds: z.object({ released: int() }),
  }),
  resultName: 'IcpWorkSweepResult',
  run: (deps) => workIcpQueue({ ctx: deps, input: {} }),
});

/** Every sweep, in the order the cron SQL schedules them. */
export const SCHEDULE: readonly Sweep[] = [periodRollover, trackerEvents, icpWork, webhookDeliveries, dataLifecycle];

/** A sweep's function name, which is also its URL segment. */
export const sweepFunctionName = (s: Pick<Sweep, 'sweep'>): string => `sweep-${s.sweep}`;

/**
 * The SQL that schedules every sweep on Supabase Cron (pg_cron + pg_net), each posting to its
 * function with the sweep token kept in Vault as `sightline_sweep_secret`.
 */
export function cronSql(baseUrl: string): string {
  const lines = ["select vault.create_secret('<the SWEEP_SECRET value>', 'sightline_sweep_secret');"];
  for (const s of SCHEDULE) {
    lines.push(
      `select cron.schedule('sightline-${s.sweep}', '${s.cron}', $$`,
      '  select net.http_post(',
      `    url := '${baseUrl}/${sweepFunctionName(s)}',`,
      "    headers := jsonb_build_object('Authorization', 'Bearer ' ||",
      "      (select decrypted_secret from vault.decrypted_secrets where name = 'sightline_sweep_secret')));",
      '$$);',
    );
  }
  return `${lines.join('\n')}\n`;
}
