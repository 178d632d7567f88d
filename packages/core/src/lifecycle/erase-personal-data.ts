import { z } from '@hono/zod-openapi';
import { forgetResults } from '../ip/result-cache.ts';
import type { VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';
import { IpAddress } from '../kernel/schemas.ts';
import { ProspectUrl } from '../messaging/prospect-url.ts';

/** One address or one person (by profile URL): what a data-protection request names. */
export const ErasureInput = z
  .object({
    ip: IpAddress.optional().openapi({ description: 'The address to erase (IPv4 or IPv6)' }),
    linkedin_url: ProspectUrl.optional().openapi({
      description: 'The person to erase: their personal LinkedIn profile URL (https://www.linkedin.com/in/<slug>)',
    }),
  })
  .strict()
  .refine((b) => (b.ip === undefined) !== (b.linkedin_url === undefined), { message: 'give exactly one of ip and linkedin_url' })
  .openapi('ErasureInput');
export type ErasureInput = z.infer<typeof ErasureInput>;

export const ErasureReport = z
  .object({
    erased: z.record(z.string(), z.number().int()).openapi({
      description: 'Rows removed (or, for ledger lines and identifications, stripped of the address or person) per table',
      example: { tracker_events: 12, visitor_sessions: 2, visitors: 1, identifications: 1, ip_cache: 1 },
    }),
  })
  .openapi('ErasureReport');
export type ErasureReport = z.infer<typeof ErasureReport>;

/**
 * Erases one address or one person from everything `accountId` holds (null: every account, the
 * operator's erasure), in one transaction, and reports what went per table. An address: every row
 * naming it is deleted and the ledger's debits lose it (sl_erase_address); a person: identifications
 * lose the person and stay the company they are, and what names them is deleted (sl_erase_person).
 * Erasing what is not there erases nothing and says so with zeros: the request is still answered.
 */
export async function erasePersonalData({ ctx, input }: VerbArgs<ErasureInput & { accountId: string | null }>): Promise<ErasureReport> {
  let row: { erased: string } | undefined;
  if (input.ip !== undefined) {
    [row] = await ctx.db<{ erased: string }>`select sl_erase_address(${input.accountId}::uuid, ${input.ip}::inet)::text as erased`;
  } else if (input.linkedin_url !== undefined) {
    [row] = await ctx.db<{ erased: string }>`select sl_erase_person(${input.accountId}::uuid, ${input.linkedin_url})::text as erased`;
  } else {
    throw new AppError('invalid_request', 'give exactly one of ip and linkedin_url');
  }
  // The erasure has committed: the copies of stored results above Postgres go too (result-cache.ts).
  if (ctx.ip) {
    await forgetResults(ctx.ip, input.accountId).catch((err: unknown) =>
      ctx.log.warn('erasure: shared copies of stored results not dropped; they expire with their results', {
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  }
  return { erased: JSON.parse(row?.erased ?? '{}') as Record<string, number> };
}
