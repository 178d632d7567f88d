import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { generateApiKey, keyPrefixOf } from '../kernel/crypto.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Timestamp, Uuid } from '../kernel/schemas.ts';

/** Spec limit: 10 rotations per child per rolling 24 hours. */
export const ROTATIONS_PER_DAY = 10;

export const RotateChildKeyInput = z.object({ child_api_key_id: Uuid }).strict().openapi('RotateKeyRequest');
export type RotateChildKeyInput = z.infer<typeof RotateChildKeyInput>;

export const RotatedKey = z.object({
  child_api_key_id: Uuid,
  key: z.string().openapi({ description: 'The new key, shown once' }),
  key_prefix: z.string(),
  old_key_prefix: z.string(),
  rotated_at: Timestamp,
});
export type RotatedKey = z.infer<typeof RotatedKey>;

/** partner-rotate-child-key: a new secret for the same key record; the old key is dead at commit. */
export async function rotateChildKey({ ctx, input }: VerbArgs<RotateChildKeyInput, PartnerCtx>): Promise<RotatedKey> {
  const key = generateApiKey();
  const hash = await ctx.keyring.hashApiKey(key);
  const [row] = await sqlCall(
    () => ctx.db<{ old_key_prefix: string; rotated_at: Date }>`
      select * from sl_rotate_child_key(${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${hash},
        ${keyPrefixOf(key)}, ${ROTATIONS_PER_DAY})`,
    { 429: 'rotation_limit' },
  );
  if (!row) throw new Error('sl_rotate_child_key returned no row');
  return {
    child_api_key_id: input.child_api_key_id,
    key,
    key_prefix: keyPrefixOf(key),
    old_key_prefix: row.old_key_prefix,
    rotated_at: new Date(row.rotated_at).toISOString(),
  };
}
