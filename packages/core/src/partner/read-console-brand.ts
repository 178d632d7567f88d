import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { Brand } from './set-partner-brand.ts';

export const ConsoleBrand = z.object({
  brand: Brand.openapi({
    description: 'For a managed child, brand_name is its own (its name when none was given) and the rest its partner’s; all null: no brand',
  }),
});
export type ConsoleBrand = z.infer<typeof ConsoleBrand>;

/**
 * The brand a key's console shows: a managed child sees its partner's accent and logo under its own
 * brand_name (never Sightline's); any other key that acts on its account sees its account's brand
 * (all null when none is set, and the console shows its own). A key scoped to its own websites (a
 * released child's, in its former partner's account) sees none: that partner no longer serves it.
 */
export async function readConsoleBrand({ ctx, input }: VerbArgs<{ key: KeyRecord }>): Promise<ConsoleBrand> {
  const [row] = await ctx.db<{ brand_name: string | null; brand_accent: string | null; brand_logo_url: string | null }>`
    select case when m.id is null then a.brand_name else coalesce(k.brand_name, k.name, pa.brand_name) end as brand_name,
           coalesce(pa.brand_accent, a.brand_accent) as brand_accent,
           coalesce(pa.brand_logo_url, a.brand_logo_url) as brand_logo_url
    from api_keys k
    join accounts a on a.id = k.account_id
    left join api_keys m on m.id = k.parent_api_key_id
    left join accounts pa on pa.id = m.account_id
    where k.id = ${input.key.apiKeyId} and k.scope = 'account'`;
  return { brand: { brand_name: row?.brand_name ?? null, accent_color: row?.brand_accent ?? null, logo_url: row?.brand_logo_url ?? null } };
}
