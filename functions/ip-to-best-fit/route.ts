import { createRoute, z } from '@hono/zod-openapi';
import { callerKey, identifyIp, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody } from '../_shared/schemas.ts';
import { Matches } from '../ip-to-company/route.ts';

export const IpToBestFitBody = z
  .object({
    ip_address: z.string().max(64).openapi({ description: 'IPv4 or IPv6 address' }),
    website: z.string().max(253).optional().openapi({ description: 'The caller’s domain, for contextual matching' }),
    description: z.string().max(2000).optional().openapi({ description: 'A business description' }),
  })
  .strict()
  .openapi('IpToBestFitRequest');

export const IpToBestFitResponse = z
  .object({
    success: z.literal(true),
    ip_address: z.string(),
    identified: z.boolean(),
    company: z.string().openapi({ description: 'Company name; empty when not identified' }),
    domain: z.string().nullable(),
    traffic_type: z.enum(['business', 'isp', 'hosting', 'vpn', 'unknown']),
    reason: z.string(),
    confidence: z.number(),
    confidence_level: z.enum(['confirmed', 'likely', 'unconfirmed']),
    matches: Matches.openapi({ description: 'Business results only' }),
    decision_makers: z
      .array(z.object({ name: z.string(), title: z.string().nullable(), linkedin_url: z.string().nullable() }))
      .openapi({ description: 'Addition to the spec: people from deeper enrichment, when it ran' }),
  })
  .openapi('IpToBestFitResult');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'The waterfall plus deeper enrichment for unresolved IPs (8 credits per lookup; VPN, hosting and ISP free)',
  request: { body: jsonBody(IpToBestFitBody) },
  responses: {
    200: { description: 'The best fit', content: { 'application/json': { schema: IpToBestFitResponse } } },
    402: errorResponse('Not enough credits'),
  },
});

export const ipToBestFit: FunctionDefinition = {
  name: 'ip-to-best-fit',
  mount: 'functions',
  method: 'POST',
  policy: policies.accountKey,
  usesIpData: true,
  register(app) {
    openapi(app, route, async (c) => {
      const body = c.req.valid('json');
      const v = await identifyIp({
        ctx: c.get('deps'),
        input: { accountId: callerKey(c).accountId, ip: body.ip_address, operation: 'ip-to-best-fit', website: body.website, description: body.description },
      });
      // The spec's best-fit vocabulary has no education/government: those are not businesses to sell to.
      const traffic = v.traffic_type === 'education' || v.traffic_type === 'government' ? 'unknown' : v.traffic_type;
      return c.json(
        {
          success: true as const,
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
        },
        200,
      );
    });
  },
};
