import { z } from '@hono/zod-openapi';
import type { VerbArgs } from '../kernel/context.ts';
import { IpAddress } from '../kernel/schemas.ts';
import { Matches } from './identify-company.ts';
import { lookUpWithCredits } from './look-up-with-credits.ts';
import { ConfidenceLevel } from './types.ts';

export const FindBestFitInput = z
  .object({
    ip_address: IpAddress,
    website: z.string().max(253).optional().openapi({ description: 'The caller’s domain, for contextual matching' }),
    description: z.string().max(2000).optional().openapi({ description: 'A business description' }),
  })
  .strict()
  .openapi('IpToBestFitRequest');
export type FindBestFitInput = z.infer<typeof FindBestFitInput>;

export const BestFit = z.object({
  ip_address: z.string(),
  identified: z.boolean(),
  company: z.string().openapi({ description: 'Company name; empty when not identified' }),
  domain: z.string().nullable(),
  traffic_type: z.enum(['business', 'isp', 'hosting', 'vpn', 'unknown']),
  reason: z.string(),
  confidence: z.number(),
  confidence_level: ConfidenceLevel,
  matches: Matches.openapi({ description: 'Business results only' }),
  decision_makers: z
    .array(z.object({ name: z.string(), title: z.string().nullable(), linkedin_url: z.string().nullable() }))
    .openapi({ description: 'Addition to the spec: people from deeper enrichment, when it ran' }),
});
export type BestFit = z.infer<typeof BestFit>;

/**
 * ip-to-best-fit: the same waterfall, then deeper enrichment for what is still unresolved; 8
 * credits per lookup (VPN, hosting and ISP free; a repeat within 7 days free), answered in the
 * spec's best-fit vocabulary.
 */
export async function findBestFit({ ctx, input }: VerbArgs<FindBestFitInput & { accountId: string; apiKeyId: string }>): Promise<BestFit> {
  const r = await lookUpWithCredits({
    ctx,
    input: {
      accountId: input.accountId,
      apiKeyId: input.apiKeyId,
      operation: 'ip-to-best-fit',
      ip: input.ip_address,
      enrich: { website: input.website, description: input.description },
    },
  });
  const v = r.verdict;
  // The spec's best-fit vocabulary has no education/government: those are not businesses to sell to.
  const traffic = v.traffic_type === 'education' || v.traffic_type === 'government' ? 'unknown' : v.traffic_type;
  return {
    ip_address: v.ip,
    identified: v.identified,
    company: v.company_name ?? '',
    domain: v.domain,
    traffic_type: traffic,
    reason: v.reason,
    confidence: v.confidence,
    confidence_level: v.confidence_level,
    matches: traffic === 'business' ? v.matches : [],
    decision_makers: v.decision_makers ?? [],
  };
}
