import { z } from '@hono/zod-openapi';
import type { VerbArgs } from '../kernel/context.ts';
import { IpAddress } from '../kernel/schemas.ts';
import { lookUpWithCredits } from './look-up-with-credits.ts';
import { ConfidenceLevel, TrafficType } from './types.ts';

export const IdentifyCompanyInput = z.object({ ip: IpAddress }).strict().openapi('IpToCompanyRequest');
export type IdentifyCompanyInput = z.infer<typeof IdentifyCompanyInput>;

export const Matches = z.array(z.object({ domain: z.string(), confidence: z.number() }));

export const IpLookupResult = z
  .object({
    ip: z.string(),
    identified: z.boolean(),
    domain: z.string().nullable(),
    company_name: z.string().nullable(),
    confidence: z.number(),
    confidence_level: ConfidenceLevel,
    traffic_type: TrafficType,
    reason: z.string(),
    matches: Matches,
    vpn_provider: z.string().nullable(),
    country_code: z.string(),
    cached: z.boolean(),
  })
  .openapi('IpLookupResult');
export type IpLookupResult = z.infer<typeof IpLookupResult>;

/**
 * ip-to-company: the waterfall for `input.ip`, paid in credits (5 per business match; VPN,
 * hosting and ISP free; a repeat within 7 days free). 402 before any paid provider is called when
 * the account cannot pay.
 */
export async function identifyCompany({
  ctx,
  input,
}: VerbArgs<IdentifyCompanyInput & { accountId: string; apiKeyId: string }>): Promise<IpLookupResult> {
  const r = await lookUpWithCredits({
    ctx,
    input: { accountId: input.accountId, apiKeyId: input.apiKeyId, operation: 'ip-to-company', ip: input.ip },
  });
  const v = r.verdict;
  return {
    ip: v.ip,
    identified: v.identified,
    domain: v.domain,
    company_name: v.company_name,
    confidence: v.confidence,
    confidence_level: v.confidence_level,
    traffic_type: v.traffic_type,
    reason: v.reason,
    matches: v.matches,
    vpn_provider: v.vpn_provider,
    country_code: v.country_code,
    cached: r.source === 'cache',
  };
}
