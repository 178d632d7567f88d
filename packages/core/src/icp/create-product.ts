import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { checkedInput, type Product, ProductFields } from './schemas.ts';

/**
 * A product of the account, what create_icp drafts an ICP from (api-icp-action create_product, and
 * the operator's create-product). An unknown account is a 404.
 */
export async function createProduct({ ctx, input }: VerbArgs<{ accountId: string; product: unknown }>): Promise<Product> {
  const fields = checkedInput(ProductFields, input.product);
  const [row] = await sqlCall(
    () => ctx.db<{ product: Product }>`select sl_create_product(${input.accountId}::uuid, ${JSON.stringify(fields)}::text::jsonb) as product`,
  );
  if (!row) throw new Error('sl_create_product returned no row');
  return row.product;
}
