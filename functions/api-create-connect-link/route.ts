import { createRoute } from '@hono/zod-openapi';
import {
  CONNECT_LINK_TTL_DAYS,
  ConnectLink,
  callerKey,
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
  description: `No body. The token is shown once (only its HMAC is kept) and works for ${CONNECT_LINK_TTL_DAYS} days and one completion; \`url\` is the link's page on this server, with the token in its fragment. Completing it (the page, or api-complete-connect-link) returns the user's id for \`x-user-id\`, and the account webhook receives \`user.connected\`.`,
  responses: {
    201: jsonAnswer('The link', CreateConnectLinkResponse),
    409: errorResponse('The account has 100 connect links open (unused and unexpired)'),
  },
});

export const apiCreateConnectLink: FunctionDefinition = {
  name: 'api-create-connect-link',
  mount: 'functions',
  method: 'POST',
  body: 'none',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) => {
      // The page is this function's sibling (`connect`), at the address this request came to.
      const pageUrl = new URL('connect', c.req.url).href;
      const link = await createConnectLink({ ctx: c.get('deps'), input: { accountId: callerKey(c).accountId, pageUrl } });
      return c.json({ success: true as const, ...link }, 201);
    });
  },
};
