import { z } from '@hono/zod-openapi';
import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { assertReachableWebhook } from '../kernel/net/webhook-destination.ts';
import { WebhookSecret, whenGiven } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from '../tracker/normalise-tracker-domain.ts';

/** The settings, in the order `updated_fields` lists them. */
export const SETTINGS_FIELDS = [
  'webhook_url',
  'webhook_secret',
  'auto_reload_enabled',
  'auto_reload_threshold',
  'allowed_domains',
  'return_quiet_days',
] as const;
export type SettingsField = (typeof SETTINGS_FIELDS)[number];
/** Spec: allowed_domains holds at most 5 entries. */
export const MAX_ALLOWED_DOMAINS = 5;

export const UpdateSettingsInput = z
  .object({
    webhook_url: z
      .string(whenGiven('must be a string, or null to remove the webhook'))
      .max(2048, 'must be at most 2048 characters')
      .nullable()
      .optional()
      .openapi({
        description:
          'HTTPS URL of the account webhook: checked against the same destination rules as every webhook (no private, loopback or metadata addresses) and probed with a HEAD request before it is saved. null removes the webhook and its secret.',
      }),
    webhook_secret: WebhookSecret.optional().openapi({
      description:
        'Signing secret, 8–256 characters; stored sealed, never returned. Required with the first webhook_url (the response cannot return a minted one).',
    }),
    auto_reload_enabled: z.boolean(whenGiven('must be true or false')).optional().openapi({
      description:
        'Buy credits automatically when the balance drops below auto_reload_threshold. It fires only once the operator has set up the reload amount and card; until then it stays enabled and api-account-status says why nothing refills.',
    }),
    auto_reload_threshold: z
      .number(whenGiven('must be a number'))
      .int('must be a whole number')
      .min(0, 'must be 0 or more')
      .max(1_000_000_000, 'must be at most 1000000000')
      .optional()
      .openapi({ description: 'Credit balance below which a reload fires and `credits.low` is sent' }),
    allowed_domains: z
      .array(z.string(whenGiven('must be strings')).max(300, 'entries must be at most 300 characters'), whenGiven('must be an array of host names'))
      .max(MAX_ALLOWED_DOMAINS, `must have at most ${MAX_ALLOWED_DOMAINS} entries`)
      .optional()
      .openapi({
        description:
          'Bare hosts (example.com, shop.example.com) the account’s trackers accept page views from, each with its subdomains; folded to lower case and de-duplicated. Non-empty, it replaces the default (each website’s own domain); [] restores the default. URLs, ports, paths and wildcards are refused.',
      }),
    return_quiet_days: z
      .number(whenGiven('must be a number'))
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(365, 'must be at most 365')
      .optional()
      .openapi({
        description: 'Addition: days an identified visitor must have been away for its next visit to send `visitor_returned` (default 7).',
      }),
  })
  .strict()
  .openapi('UpdateSettingsRequest');
export type UpdateSettingsInput = z.infer<typeof UpdateSettingsInput>;

export const UpdatedSettings = z
  .object({ updated_fields: z.array(z.enum(SETTINGS_FIELDS)).openapi({ description: 'The fields the request included, in a fixed order' }) })
  .openapi('UpdatedSettings');
export type UpdatedSettings = z.infer<typeof UpdatedSettings>;

const NEEDS_SECRET = 'webhook_url needs a webhook_secret (at least 8 characters): none is stored, so give one in the same request';

/** Whether a secret is stored: asked before probing a URL that would be refused without one (the SQL checks again under its lock). */
async function hasWebhookSecret(ctx: CoreDeps, accountId: string): Promise<boolean> {
  const [row] = await ctx.db<{ has: boolean }>`select webhook_secret_sealed is not null as has from accounts where id = ${accountId}`;
  return row?.has === true;
}

/** Each entry a bare host (400 naming the entry otherwise), lower case, each once. */
function normaliseAllowedDomains(entries: string[]): string[] {
  const hosts = entries.map((raw, i) => normaliseTrackerDomain(raw, `allowed_domains[${i}] (${JSON.stringify(raw.slice(0, 60))})`));
  return [...new Set(hosts)];
}

/**
 * api-update-settings: only the fields given change, all in one transaction
 * (sl_update_account_settings). Everything is checked before anything is written: the body, the
 * domains, then the webhook URL's destination and reachability (the one network call). A URL needs
 * a secret — this request's or the stored one. Auto-reload may be enabled before the operator's
 * reload set-up exists; it cannot fire until then (api-account-status says so). After the change
 * the balance is judged against the new threshold as after any balance change, so lowering the
 * balance's bar below it sends `credits.low` and may start a reload.
 */
/** accounts.webhook_url's CHECK. */
const MAX_WEBHOOK_URL = 2048;

export async function updateAccountSettings({ ctx, input }: VerbArgs<UpdateSettingsInput & { accountId: string }>): Promise<UpdatedSettings> {
  const given = SETTINGS_FIELDS.filter((f) => input[f] !== undefined);
  if (given.length === 0) throw badRequest(`nothing to update: give at least one of ${SETTINGS_FIELDS.join(', ')}`);
  if (input.webhook_url === null && input.webhook_secret !== undefined) {
    throw badRequest('webhook_secret cannot be set while webhook_url is being removed (null)');
  }
  const domains = input.allowed_domains === undefined ? null : normaliseAllowedDomains(input.allowed_domains);
  let url: string | null = null;
  if (typeof input.webhook_url === 'string') {
    if (input.webhook_secret === undefined && !(await hasWebhookSecret(ctx, input.accountId))) throw badRequest(NEEDS_SECRET);
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(input.webhook_url)?.[1]?.toLowerCase();
    // Plain http only where ALLOW_PRIVATE_WEBHOOKS admits a local receiver (development, tests).
    if (scheme !== 'https' && !(ctx.allowPrivateWebhooks && scheme === 'http')) throw badRequest('webhook_url must be an https:// URL');
    url = await assertReachableWebhook(input.webhook_url, { allowPrivate: ctx.allowPrivateWebhooks }, ctx.webhooks, 'webhook_url');
    // What is stored is the normalised URL, in which each non-ASCII character becomes up to twelve
    // percent-encoded ones: its length is what the column's limit applies to.
    if (url.length > MAX_WEBHOOK_URL) throw badRequest(`webhook_url must be at most ${MAX_WEBHOOK_URL} characters once percent-encoded`);
  }
  const sealed = input.webhook_secret === undefined ? null : await ctx.keyring.seal(input.webhook_secret);
  const [row] = await sqlCall(
    () => ctx.db<{ reload: boolean }>`
      select sl_update_account_settings(
        ${input.accountId},
        ${input.webhook_url !== undefined}, ${url},
        ${input.webhook_secret !== undefined}, ${sealed},
        ${input.auto_reload_enabled !== undefined}, ${input.auto_reload_enabled ?? null},
        ${input.auto_reload_threshold !== undefined}, ${input.auto_reload_threshold ?? null},
        ${domains !== null},
        array(select d.value from jsonb_array_elements_text(${JSON.stringify(domains ?? [])}::text::jsonb) with ordinality d order by d.ordinality),
        ${input.return_quiet_days !== undefined}, ${input.return_quiet_days ?? null}
      ) as reload`,
  );
  // A reload delivers the account's events once it has charged; without one, credits.low (when
  // the new threshold put the balance below it) is delivered now.
  if (row?.reload) startAfterWork(ctx, 'credit-reload', { accountId: input.accountId });
  else startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: input.accountId });
  return { updated_fields: given };
}
