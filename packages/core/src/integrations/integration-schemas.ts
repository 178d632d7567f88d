import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid, whenGiven } from '../kernel/schemas.ts';

export const INTEGRATION_KINDS = ['slack', 'teams', 'hubspot', 'pipedrive'] as const;
export const SIGNAL_KINDS = ['visitor_identified', 'visitor_returned', 'high_intent', 'icp_qualified', 'watched_visit'] as const;

export const IntegrationKind = z.enum(INTEGRATION_KINDS, whenGiven('must be slack, teams, hubspot or pipedrive'));
export const Signals = z
  .array(z.enum(SIGNAL_KINDS, whenGiven(`must be one of ${SIGNAL_KINDS.join(', ')}`)))
  .min(1, 'name at least one signal')
  .max(SIGNAL_KINDS.length)
  .refine((s) => new Set(s).size === s.length, 'must not repeat a signal')
  .openapi({ description: 'The signals it receives' });
export const CooldownSeconds = z
  .number()
  .int()
  .min(0)
  .max(30 * 86400, 'must be at most 30 days')
  .openapi({ description: 'One message per company per cooldown (default 86400: a day)' });
export const IntegrationName = z.string().trim().min(1, 'must not be empty').max(200);

/** An integration as the API shows it: never its webhook URL or token. */
export const Integration = z
  .object({
    id: Uuid,
    kind: IntegrationKind,
    name: z.string(),
    website_id: Uuid.nullable().openapi({ description: 'Null: every website of the account' }),
    signals: z.array(z.enum(SIGNAL_KINDS)),
    cooldown_seconds: z.number().int(),
    digest: z.boolean().openapi({ description: 'One message a day with the day’s companies' }),
    status: z.enum(['active', 'paused']),
    paused_reason: z.string().nullable().openapi({ description: 'Why it was paused (set while paused)' }),
    failures_in_row: z.number().int(),
    created_at: Timestamp,
  })
  .openapi('Integration');
export type Integration = z.infer<typeof Integration>;

export interface IntegrationRow {
  id: string;
  kind: Integration['kind'];
  name: string;
  website_id: string | null;
  signals: Integration['signals'];
  cooldown_seconds: number;
  digest: boolean;
  status: Integration['status'];
  paused_reason: string | null;
  failures_in_row: number;
  created_at: Date;
}

export const integrationOfRow = (r: IntegrationRow): Integration => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  website_id: r.website_id,
  signals: r.signals,
  cooldown_seconds: r.cooldown_seconds,
  digest: r.digest,
  status: r.status,
  paused_reason: r.paused_reason,
  failures_in_row: r.failures_in_row,
  created_at: r.created_at.toISOString(),
});
