import { createRoute } from '@hono/zod-openapi';
import { callerKey, type FunctionDefinition, jsonAnswer, openapi, policies, VisitorStats, VisitorStatsInput, visitorStats } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const VisitorStatsResponse = succeeded(VisitorStats, 'VisitorStatsResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: identified companies per day and the traffic mix of the key’s trackers',
  description: 'The trackers are those list-visitors lists for the key. The range is at most 366 days (default: the last 30).',
  request: { query: VisitorStatsInput },
  responses: { 200: jsonAnswer('The charts’ data', VisitorStatsResponse) },
});

export const visitorStatsFunction: FunctionDefinition = {
  name: 'visitor-stats',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await visitorStats({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } })) }, 200),
    );
  },
};
