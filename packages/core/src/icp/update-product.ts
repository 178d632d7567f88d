import type { VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { checkedInput, type Product, ProductChanges } from './schemas.ts';

/**
 * Changes the given fields of a product of the account (api-icp-action update_product); null clears
 * url or description. An unknown product is a 404, another account's a 403, an update that names
 * no field a 400. ICPs drafted from the product keep what they were drafted with.
 */
export async function updateProduct({ ctx, input }: VerbArgs<{ accountId: string; productId: string; changes: unknown }>): Promise<Product> {
  const changes = checkedInput(ProductChanges, input.changes);
  if (Object.values(changes).every((v) => v === undefined)) {
    throw badRequest('give at least one of name, url, description, value_propositions, target_customers to change');
  }
  const [row] = await sqlCall(
    () => ctx.db<{ product: Product }>`
      select sl_update_product(${input.accountId}::uuid, ${input.productId}::uuid, ${JSON.stringify(changes)}::text::jsonb) as product`,
  );
  if (!row) throw new Error('sl_update_product returned no row');
  return row.product;
}
