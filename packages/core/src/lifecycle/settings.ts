import { z } from 'zod';

/**
 * How long each kind of data is kept (docs/operating.md, "Data lifecycle"). Raw rows go after their
 * retention; a visitor's address goes from every row that keeps counting them once they have not
 * been seen for `personalDataMonths`.
 */
export interface RetentionSettings {
  /** Raw tracker events, by the week they arrived (whole weekly partitions are dropped). */
  trackerEventDays: number;
  /** Webhook events and their attempts, after they end (delivered, finally failed, no destination). */
  webhookEventDays: number;
  /** Connect links, after they were used or expired. */
  connectLinkDays: number;
  /** A visitor's address, after they were last seen. */
  personalDataMonths: number;
}

/**
 * What a careful operator would choose: a month of raw events rebuilds aggregates and answers
 * "what happened last week"; a month of webhook history covers a receiver's outage and its replay;
 * a used link is only the answer to a late repeat of its completion; 13 months is the lifetime
 * the French regulator's (CNIL) audience-measurement guidance allows a visitor's identifier.
 */
export const DEFAULT_RETENTION: RetentionSettings = {
  trackerEventDays: 30,
  webhookEventDays: 30,
  connectLinkDays: 7,
  personalDataMonths: 13,
};

/** Every month is at least this long: how retention in days is held within the ageing period. */
const SHORTEST_MONTH_DAYS = 28;

/** The settings as configuration reads them (spread into compose/config.ts's one schema). */
export const RetentionEnvSchema = z.object({
  TRACKER_EVENT_RETENTION_DAYS: z.coerce.number().int().min(7).max(3650).default(DEFAULT_RETENTION.trackerEventDays),
  WEBHOOK_EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(DEFAULT_RETENTION.webhookEventDays),
  CONNECT_LINK_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(DEFAULT_RETENTION.connectLinkDays),
  PERSONAL_DATA_RETENTION_MONTHS: z.coerce.number().int().min(2).max(120).default(DEFAULT_RETENTION.personalDataMonths),
});

export type RetentionEnv = z.infer<typeof RetentionEnvSchema>;

export function retentionSettings(env: RetentionEnv): RetentionSettings {
  return {
    trackerEventDays: env.TRACKER_EVENT_RETENTION_DAYS,
    webhookEventDays: env.WEBHOOK_EVENT_RETENTION_DAYS,
    connectLinkDays: env.CONNECT_LINK_RETENTION_DAYS,
    personalDataMonths: env.PERSONAL_DATA_RETENTION_MONTHS,
  };
}

/**
 * The cross-field rule: raw events and webhook events (which carry addresses and people) are gone
 * before the ageing period ends, so ageing only has to rewrite the rows that keep counting. A
 * message naming what to change, or null.
 */
export function retentionConflict(env: RetentionEnv): string | null {
  const limit = env.PERSONAL_DATA_RETENTION_MONTHS * SHORTEST_MONTH_DAYS;
  for (const name of ['TRACKER_EVENT_RETENTION_DAYS', 'WEBHOOK_EVENT_RETENTION_DAYS'] as const) {
    if (env[name] > limit) {
      return `${name} (${env[name]}) must not exceed PERSONAL_DATA_RETENTION_MONTHS × 28 days (${limit}): raw rows hold addresses, which go after that period`;
    }
  }
  return null;
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** How long data is kept (lifecycle/settings.ts); absent, DEFAULT_RETENTION. */
    retention?: RetentionSettings;
  }
}
