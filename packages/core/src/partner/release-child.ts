import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Uuid } from '../kernel/schemas.ts';

export const ReleaseChildInput = z.object({ child_api_key_id: Uuid }).strict().openapi('ReleaseChildRequest');
export type ReleaseChildInput = z.infer<typeof ReleaseChildInput>;

export const ReleasedChild = z.object({ released_api_key_id: Uuid, topup_returned: z.number().int() });
export type ReleasedChild = z.infer<typeof ReleasedChild>;

/**
 * partner-release-child: back to a direct key of the partner; remaining top-up returns to the pool.
 * The key, whose plaintext its former customer still holds, is scoped to its own websites in the
 * same transaction (sl_release_child): its tracker keeps working and it reads its own websites'
 * visitors, but it is no key to the partner's account (no connect links, no x-user-id calls, no
 * lookups on the partner's credits, none of the partner's other trackers).
 */
export async function releaseChild({ ctx, input }: VerbArgs<ReleaseChildInput, PartnerCtx>): Promise<ReleasedChild> {
  const [row] = await sqlCall(
    () => ctx.db<{ topup_returned: number }>`select * from sl_release_child(${ctx.caller.apiKeyId}, ${input.child_api_key_id})`,
  );
  if (!row) throw new Error('sl_release_child returned no row');
  return { released_api_key_id: input.child_api_key_id, topup_returned: row.topup_returned };
}
