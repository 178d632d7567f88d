import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';

export const PLANS = ['free', 'starter', 'growth', 'pro'] as const;
export type Plan = (typeof PLANS)[number];

/**
 * Operator: an account's plan, which sets how many ICPs it may have (Free 1, Starter 3, Growth 6,
 * Pro unlimited; sl_plan_icp_limit). A lower plan keeps the ICPs the account has; it refuses new
 * ones until the count is under the new limit. An unknown account is a 404.
 */
export async function setPlan({ ctx, input }: VerbArgs<{ accountId: string; plan: Plan }>) {
  const [row] = await ctx.db<{ plan: Plan; icp_limit: number | null; icp_count: number }>`
    update accounts a set plan = ${input.plan} where a.id = ${input.accountId}::uuid
    returning a.plan, sl_plan_icp_limit(a.plan) as icp_limit, (select count(*)::int from icps i where i.account_id = a.id) as icp_count`;
  if (!row) throw notFound(`no such account ${input.accountId}`);
  return { account_id: input.accountId, plan: row.plan, icp_limit: row.icp_limit, icp_count: row.icp_count };
}
