import type { VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { insertKey } from './account-records.ts';

export interface CreatePartnerInput {
  name: string;
  billing?: 'prepaid' | 'invoice_monthly';
  quota?: number;
  topup?: number;
  perIdPence?: number;
  card?: string;
}

/** A partner account with its designated master key and a pool starting a 30-day period now. */
export async function createPartner({ ctx, input }: VerbArgs<CreatePartnerInput>) {
  const name = input.name.trim();
  if (!name) throw badRequest('--name is required');
  return sqlCall(() =>
    ctx.db.begin(async (tx) => {
      const [account] = await tx<{ id: string }>`
        insert into accounts (name, is_partner) values (${name}, true) returning id`;
      if (!account) throw new Error('account insert returned no row');
      const key = await insertKey(tx, ctx, account.id, { master: true });
      const [pool] = await tx<{ id: string }>`
        insert into pools (account_id, monthly_id_quota, topup_balance, pool_billing_mode, partner_per_id_pence,
                           payment_method_id, current_period_start, current_period_end)
        values (${account.id}, ${input.quota ?? 0}, ${input.topup ?? 0}, ${input.billing ?? 'prepaid'},
                ${input.perIdPence ?? null}, ${input.card ?? null}, now(), now() + interval '30 days')
        returning id`;
      if (!pool) throw new Error('pool insert returned no row');
      if ((input.topup ?? 0) > 0) {
        await tx`insert into topups (pool_id, amount_ids, status, source)
                 values (${pool.id}, ${input.topup ?? 0}, 'completed', 'operator')`;
      }
      return { account_id: account.id, api_key_id: key.id, key: key.key };
    }),
  );
}
