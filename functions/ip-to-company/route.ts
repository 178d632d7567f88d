import { createRoute, z } from '@hono/zod-openapi';
import { callerKey, identifyIp, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody } from '../_shared/schemas.ts';

export const IpToCompanyBody = z
  .object({ ip: z.string().max(64).openapi({ description: 'IPv4 or IPv6 address', example: '17.253.144.10' }) })
  .strict()
  .openapi('IpToCompanyRequest');

const TrafficType = z.enum(['business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown']);
const Level = z.enum(['confirmed', 'likely', 'unconfirmed']);
export const Matches = z.array(z.object({ domain: z.string(), confidence: z.number() }));

export const IpToCompanyResponse = z
  .object({
    ip: z.string(),
    identified: z.boolean(),
    domain: z.string().nullable(),
    company_name: z.string().nullable(),
    confidence: z.number(),
    confidence_level: Level,
    traffic_type: TrafficType,
    reason: z.string(),
    matches: Matches,
    vpn_provider: z.string().nullable(),
    country_code: z.string(),
    cached: z.boolean(),
  })
  .openapi('IpLookupResult');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Identify the company behind an IP address (5 credits per business match; VPN, hosting and ISP free)',
  request: { body: jsonBody(IpToCompanyBody) },
  responses: {
    200: { description: 'The lookup result', content: { 'application/json': { schema: IpToCompanyResponse } } },
    402: errorResponse('Not enough credits for a lookup that needs the paid providers'),
  },
});

export const ipToCompany: FunctionDefinition = {
  name: 'ip-to-company',
  mount: 'functions',
  method: 'POST',
  policy: policies.accountKey,
  usesIpData: true,
  register(app) {
    openapi(app, route, async (c) => {
      const v = await identifyIp({
        ctx: c.get('deps'),
        input: { accountId: callerKey(c).accountId, ip: c.req.valid('json').ip, operation: 'ip-to-company' },
      });
      return c.json(
        {
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
          cached: v.cached,
        },
        200,
      );
    });
  },
};
