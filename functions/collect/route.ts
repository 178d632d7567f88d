import { createRoute, z } from '@hono/zod-openapi';
import {
  CollectEventInput,
  collectEvent,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  requestHeader,
  startAfterWork,
} from '@sightline/core';
import { jsonBody } from '../_shared/schemas.ts';

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'The tracker script’s beacon: a page view, or engaged time (sent as text/plain JSON, no preflight)',
  description:
    'Answers 202 at once: the event is only appended; identification happens later, off the request path. The visitor’s address is the one the server saw (TRUSTED_PROXIES decides whose X-Forwarded-For is believed), never a body field. Events for an unknown or inactive tracker, a revoked key, or a page outside the website’s domain (or, when the account set allowed_domains, outside those hosts) are dropped without saying so, as are events whose Origin (or, without one, Referer) is refused by the same rule, or is `null`. Beacons over collect’s budgets (per client address, and per website for new visitors) are dropped the same way and counted as filtered; a beacon without a User-Agent is a bot’s.',
  request: { body: jsonBody(CollectEventInput) },
  responses: { 202: jsonAnswer('Accepted', z.object({ success: z.literal(true) })) },
});

export const collect: FunctionDefinition = {
  name: 'collect',
  mount: 'functions',
  method: 'POST',
  body: 'text-json',
  policy: policies.publicTracker,
  // The worker each stored beacon starts (in EdgeRuntime.waitUntil on Supabase) identifies visitors.
  usesIpData: true,
  register(app) {
    openapi(app, route, async (c) => {
      const caller = c.get('caller');
      const ip = caller.kind === 'visitor' ? caller.ip : null;
      const deps = c.get('deps');
      const { stored } = await collectEvent({
        ctx: deps,
        input: {
          ...c.req.valid('json'),
          ip,
          userAgent: requestHeader(c, 'user-agent'),
          origin: requestHeader(c, 'origin'),
          referer: requestHeader(c, 'referer'),
        },
      });
      if (stored) startAfterWork(deps, 'tracker-queue');
      return c.json({ success: true as const }, 202);
    });
  },
};
