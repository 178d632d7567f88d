import type { VerbArgs } from '../context.ts';
import type { Verdict } from './resolve-ip.ts';

/**
 * Remembers an identified business that key `apiKeyId` looked up with ip-to-company or
 * ip-to-best-fit (cached answers too: lookup_count counts every lookup), as list-visitors' `api`
 * rows. Anything that is not an identified business is nobody to list.
 */
export async function recordApiLookup({ ctx, input }: VerbArgs<{ apiKeyId: string; verdict: Verdict }>): Promise<void> {
  const v = input.verdict;
  if (!v.identified || v.traffic_type !== 'business' || !v.domain || !v.company_name) return;
  await ctx.db`
    select sl_record_api_lookup(${input.apiKeyId}::uuid, ${v.ip}::inet, ${v.domain}, ${v.company_name}, ${v.confidence}::real,
                                ${/^[A-Z]{2}$/.test(v.country_code) ? v.country_code : ''})`;
}
