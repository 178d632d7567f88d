import { createRoute, z } from '@hono/zod-openapi';
import { type FunctionDefinition, openapi, policies, serveConnectPage } from '@sightline/core';

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'The connect link’s page: a form that completes the link (`#token=` in the URL’s fragment)',
  description:
    'Self-contained HTML (no external assets) under a strict Content-Security-Policy; its script reads the token from the fragment, which browsers never send, and POSTs the form as JSON to api-complete-connect-link beside it.',
  responses: {
    200: {
      description: 'The page',
      headers: {
        'Content-Security-Policy': {
          description: 'Only the page’s own script and style, fetches to its own origin, no framing',
          schema: { type: 'string' },
        },
      },
      content: { 'text/html': { schema: z.string() } },
    },
  },
});

export const connect: FunctionDefinition = {
  name: 'connect',
  mount: 'functions',
  method: 'GET',
  policy: policies.publicLink,
  // A static page: answered without the database.
  readsDatabase: false,
  register(app) {
    openapi(app, route, async (c) => {
      const page = await serveConnectPage();
      return c.body(page.body, 200, page.headers);
    });
  },
};
