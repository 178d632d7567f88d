import { createRoute } from '@hono/zod-openapi';
import { ConsoleBrand, callerKey, type FunctionDefinition, jsonAnswer, openapi, policies, readConsoleBrand } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ConsoleBrandResponse = succeeded(ConsoleBrand, 'ConsoleBrandResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: the brand the key’s console shows',
  description:
    'Any key of the account. A managed child’s key gets its partner’s accent and logo with its own brand_name; any other key its own account’s brand (all null when none is set).',
  responses: { 200: jsonAnswer('The brand', ConsoleBrandResponse) },
});

export const consoleBrand: FunctionDefinition = {
  name: 'console-brand',
  mount: 'functions',
  method: 'GET',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await readConsoleBrand({ ctx: c.get('deps'), input: { key: callerKey(c) } })) }, 200),
    );
  },
};
