import type { VerbArgs } from '../kernel/context.ts';
import type { Product } from './schemas.ts';

/** The account's products, oldest first (api-icp-action list_products). */
export async function listProducts({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<Product[]> {
  const rows = await ctx.db<{ product: Product }>`
    select sl_product_json(p) as product from products p where p.account_id = ${input.accountId}::uuid order by p.created_at, p.id`;
  return rows.map((r) => r.product);
}
