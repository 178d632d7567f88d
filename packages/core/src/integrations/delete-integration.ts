import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { Uuid } from '../kernel/schemas.ts';

export const DeleteIntegrationInput = z.object({ integration_id: Uuid }).strict().openapi('DeleteIntegrationRequest');
export type DeleteIntegrationInput = z.infer<typeof DeleteIntegrationInput>;

export const DeletedIntegration = z.object({ integration_id: Uuid });

/**
 * integration-delete: its sealed credential goes with it; its deliveries stay in the outbox's
 * history (their integration null), and those not yet sent settle as no_destination, as a removed
 * webhook's do.
 */
export async function deleteIntegration({
  ctx,
  input,
}: VerbArgs<DeleteIntegrationInput & { key: KeyRecord }>): Promise<z.infer<typeof DeletedIntegration>> {
  const rows =
    await ctx.db`delete from integrations where id = ${input.integration_id} and id in (select sl_key_integrations(${input.key.apiKeyId})) returning id`;
  if (rows.length === 0) throw notFound(`no integration ${input.integration_id} in this account`);
  return { integration_id: input.integration_id };
}
