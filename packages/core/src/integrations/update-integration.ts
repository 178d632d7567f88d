import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest, notFound, sqlCall } from '../kernel/errors.ts';
import { Uuid } from '../kernel/schemas.ts';
import { CooldownSeconds, Integration, IntegrationName, type IntegrationRow, integrationOfRow, Signals } from './integration-schemas.ts';

export const UpdateIntegrationInput = z
  .object({
    integration_id: Uuid,
    name: IntegrationName.optional(),
    signals: Signals.optional(),
    cooldown_seconds: CooldownSeconds.optional(),
    status: z.enum(['active', 'paused']).optional().openapi({ description: 'active resumes a paused integration (its failures forgotten)' }),
  })
  .strict()
  .openapi('UpdateIntegrationRequest');
export type UpdateIntegrationInput = z.infer<typeof UpdateIntegrationInput>;

export const UpdatedIntegration = z.object({ integration: Integration });

/**
 * integration-update: renames it, changes its signals or cooldown, pauses it or resumes it. A
 * resume forgets the failures in a row; the deliveries that failed while it failed stay failed, and
 * integration-delivery-replay sends one again. The credential is not changed here: delete the
 * integration and create another.
 */
export async function updateIntegration({
  ctx,
  input,
}: VerbArgs<UpdateIntegrationInput & { key: KeyRecord }>): Promise<z.infer<typeof UpdatedIntegration>> {
  const { integration_id: id, key, ...change } = input;
  if (Object.keys(change).length === 0) throw badRequest('name at least one of name, signals, cooldown_seconds, status');
  const signals = change.signals ? JSON.stringify(change.signals) : null;
  const [row] = await sqlCall(
    () => ctx.db<IntegrationRow>`
      update integrations set
        name = coalesce(${change.name ?? null}, name),
        signals = case when ${signals}::text::jsonb is null then signals else array(select jsonb_array_elements_text(${signals}::text::jsonb)) end,
        cooldown_seconds = coalesce(${change.cooldown_seconds ?? null}::integer, cooldown_seconds),
        status = coalesce(${change.status ?? null}, status),
        paused_reason = case coalesce(${change.status ?? null}, status) when 'active' then null
                          else coalesce(paused_reason, 'paused by the account') end,
        failures_in_row = case when ${change.status ?? null}::text = 'active' then 0 else failures_in_row end
      where id = ${id} and id in (select sl_key_integrations(${key.apiKeyId}))
      returning id, kind, name, website_id, signals, cooldown_seconds, digest, status, paused_reason, failures_in_row, created_at`,
  );
  if (!row) throw notFound(`no integration ${id} in this account`);
  return { integration: integrationOfRow(row) };
}
