import { createRoute } from '@hono/zod-openapi';
import {
  CONNECT_LINK_COMPLETIONS,
  CompleteConnectLinkInput,
  ConnectedUser,
  completeConnectLink,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const CompleteConnectLinkResponse = succeeded(ConnectedUser, 'CompleteConnectLinkResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Complete a connect link: record the user and their professional profile',
  description: `No key: the link’s token is the credential. Called by the link’s page on this origin (no CORS). Connecting a profile that was disconnected from the account gives back the same user (\`reconnected\`); one connected now is a 409. The answer names the user, never the account. At most ${CONNECT_LINK_COMPLETIONS.limit} completions per ${CONNECT_LINK_COMPLETIONS.windowSeconds} s per client address (an IPv6 client by its /64); beyond, 429 with Retry-After.`,
  request: { body: jsonBody(CompleteConnectLinkInput) },
  responses: {
    200: jsonAnswer('The connected user', CompleteConnectLinkResponse),
    404: errorResponse('No connect link has this token', ['not_found']),
    409: errorResponse('The profile is connected to the account now; the link stays unused', ['conflict']),
    410: errorResponse('The link was used already, or has expired', ['gone']),
    // The policy's limit (publicLinkCompletion); the policy documents its headers.
    429: errorResponse('Too many completions from this client address; see Retry-After', ['rate_limited']),
  },
});

export const apiCompleteConnectLink: FunctionDefinition = {
  name: 'api-complete-connect-link',
  mount: 'functions',
  method: 'POST',
  policy: policies.publicLinkCompletion,
  register(app) {
    openapi(app, route, async (c) => {
      const { account_id: _account, ...user } = await completeConnectLink({ ctx: c.get('deps'), input: c.req.valid('json') });
      return c.json({ success: true as const, ...user }, 200);
    });
  },
};
