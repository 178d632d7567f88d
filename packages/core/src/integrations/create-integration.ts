import { z } from '@hono/zod-openapi';
import type { CoreDeps, KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { parseWebhookUrl } from '../kernel/net/webhook-destination.ts';
import { Uuid } from '../kernel/schemas.ts';
import {
  CooldownSeconds,
  Integration,
  IntegrationKind,
  IntegrationName,
  type IntegrationRow,
  integrationOfRow,
  Signals,
} from './integration-schemas.ts';

export const CreateIntegrationInput = z
  .object({
    kind: IntegrationKind,
    name: IntegrationName,
    website_id: Uuid.optional().openapi({ description: 'One website of the account; omitted: every website' }),
    webhook_url: z.string().max(2048).optional().openapi({ description: 'Slack and Teams: the incoming-webhook (workflow) URL' }),
    token: z
      .string()
      .min(8, 'must be at least 8 characters')
      .max(500)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional()
      .openapi({ description: 'HubSpot: a private app’s access token; Pipedrive: the API token' }),
    signals: Signals,
    cooldown_seconds: CooldownSeconds.optional(),
    digest: z.boolean().optional().openapi({ description: 'Slack and Teams: one message a day with the day’s companies, instead of one per signal' }),
  })
  .strict()
  .openapi('CreateIntegrationRequest');
export type CreateIntegrationInput = z.infer<typeof CreateIntegrationInput>;

export const CreatedIntegration = z.object({ integration: Integration });

/** The destination's credential, by kind: a chat webhook's URL (checked like any webhook's), or a CRM token. */
function credentialOf(ctx: CoreDeps, input: CreateIntegrationInput): string {
  const chat = input.kind === 'slack' || input.kind === 'teams';
  if (chat) {
    if (input.token !== undefined) throw badRequest(`token is for hubspot and pipedrive; ${input.kind} takes webhook_url`);
    if (input.webhook_url === undefined) throw badRequest(`webhook_url is required for ${input.kind}`);
    const url = parseWebhookUrl(input.webhook_url, { allowPrivate: ctx.allowPrivateWebhooks });
    if (url.protocol !== 'https:' && !ctx.allowPrivateWebhooks) throw badRequest('webhook_url must be an https URL');
    return url.href;
  }
  if (input.webhook_url !== undefined) throw badRequest(`webhook_url is for slack and teams; ${input.kind} takes token`);
  if (input.digest) throw badRequest('digest is for slack and teams: a CRM takes each signal');
  if (input.token === undefined) throw badRequest(`token is required for ${input.kind}`);
  return input.token;
}

/**
 * integration-create: a Slack or Teams alert, or a HubSpot or Pipedrive push, for the key's account
 * (one website, or all). The webhook URL or token is sealed before it is stored and is never shown
 * again; at most 20 per account (sl_create_integration).
 */
export async function createIntegration({
  ctx,
  input,
}: VerbArgs<CreateIntegrationInput & { key: KeyRecord }>): Promise<z.infer<typeof CreatedIntegration>> {
  const sealed = await ctx.keyring.seal(credentialOf(ctx, input));
  const [row] = await sqlCall(
    () => ctx.db<IntegrationRow>`
      select * from sl_create_integration(${input.key.apiKeyId}::uuid, ${input.website_id ?? null}::uuid, ${input.kind}, ${input.name},
        ${sealed}, array(select jsonb_array_elements_text(${JSON.stringify(input.signals)}::text::jsonb)), ${input.cooldown_seconds ?? 86400}, ${input.digest ?? false})`,
  );
  if (!row) throw new Error('sl_create_integration returned nothing');
  return { integration: integrationOfRow(row) };
}
