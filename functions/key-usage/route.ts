import { createRoute } from '@hono/zod-openapi';
import { callerKey, type FunctionDefinition, jsonAnswer, KeyUsage, openapi, policies, readKeyUsage } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const KeyUsageResponse = succeeded(KeyUsage, 'KeyUsageResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: the IDs the key draws on (quota, used, top-up, period end)',
  description:
    'Any key that acts on its account, a suspended one too (a key scoped to its own websites, such as a released child’s, is a 403: the pool is the account’s). A managed child’s key reads its own subscription; a partner’s master key reads the pool; a key whose identifications are not metered in IDs answers `metered_by: none`.',
  responses: { 200: jsonAnswer('The usage', KeyUsageResponse) },
});

export const keyUsage: FunctionDefinition = {
  name: 'key-usage',
  mount: 'functions',
  method: 'GET',
  policy: policies.accountActor,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await readKeyUsage({ ctx: c.get('deps'), input: { key: callerKey(c) } })) }, 200),
    );
  },
};
