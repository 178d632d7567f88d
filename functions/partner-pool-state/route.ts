import { createRoute } from '@hono/zod-openapi';
import { type FunctionDefinition, getPoolState, jsonAnswer, openapi, PoolState, partnerCtx, policies } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const PoolStateResponse = succeeded(PoolState, 'PoolState');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Read the partner pool, auto-reload settings and recent top-ups',
  description: 'Read-only. Exempt from the out-of-IDs 402 and from the API-wide rate limit.',
  responses: { 200: jsonAnswer('The pool state', PoolStateResponse) },
});

export const partnerPoolState: FunctionDefinition = {
  name: 'partner-pool-state',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerPoolRead,
  register(app) {
    openapi(app, route, async (c) => c.json({ success: true as const, ...(await getPoolState({ ctx: partnerCtx(c), input: {} })) }, 200));
  },
};
