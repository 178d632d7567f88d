import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { Integration, type IntegrationRow, integrationOfRow } from './integration-schemas.ts';

export const IntegrationList = z.object({ integrations: z.array(Integration) });

/** integrations (GET): the integrations the key may see (sl_key_integrations), newest first, never their credentials. */
export async function listIntegrations({ ctx, input }: VerbArgs<{ key: KeyRecord }>): Promise<z.infer<typeof IntegrationList>> {
  const rows = await ctx.db<IntegrationRow>`
    select id, kind, name, website_id, signals, cooldown_seconds, digest, status, paused_reason, failures_in_row, created_at
    from integrations where id in (select sl_key_integrations(${input.key.apiKeyId})) order by created_at desc, id`;
  return { integrations: rows.map(integrationOfRow) };
}
