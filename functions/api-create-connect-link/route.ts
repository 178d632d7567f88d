import { createRoute } from '@hono/zod-openapi';
import {
  CONNECT_LINK_TTL_DAYS,
  ConnectLink,
  callerKey,
  connectPageUrl,
  createConnectLink,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const CreateConnectLinkResponse = succeeded(ConnectLink, 'CreateConnectLinkResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Create a connect link: a one-time page where a user connects their profile to the account (spec rule 2)',
  description: `No body. The token is shown once (only its HMAC is kept) and works for ${CONNECT_LINK_TTL_DAYS} days and one completion; \`url\` is the link's page at the configured public address (PUBLIC_BASE_URL, never the request's Host), with the token in its fragment, or null where none is configured. Completing it (the page, or api-complete-connect-link) returns the user's id for \`x-user-id\`, and the account webhook receives \`user.connected\`. A key scoped to its own websites cannot make one (403).`,
  responses: {
    201: jsonAnswer('The link', CreateConnectLinkResponse),
    409: errorResponse('The account has 100 connect links open (unused and unexpired)', ['conflict']),
  },
});

export const apiCreateConnectLink: FunctionDefinition = {
  name: 'api-create-connect-link',
  mount: 'functions',
  method: 'POST',
  body: 'none',
  policy: policies.accountActor,
  register(app) {
    openapi(app, route, async (c) => {
      const deps = c.get('deps');
      const link = await createConnectLink({ ctx: deps, input: { accountId: callerKey(c).accountId, pageUrl: connectPageUrl(deps) } });
      return c.json({ success: true as const, ...link }, 201);
    });
  },
};
