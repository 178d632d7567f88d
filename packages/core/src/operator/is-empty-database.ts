import type { VerbArgs } from '../kernel/context.ts';

/** Whether the database holds no account yet (first start). */
export async function isEmptyDatabase({ ctx }: VerbArgs<Record<string, never>>): Promise<boolean> {
  const [row] = await ctx.db<{ empty: boolean }>`select not exists (select 1 from accounts) as empty`;
  return row?.empty ?? true;
}
