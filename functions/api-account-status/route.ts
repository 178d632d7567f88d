import { createRoute } from '@hono/zod-openapi';
import { AccountStatus, callerKey, type FunctionDefinition, getAccountStatus, jsonAnswer, openapi, policies } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const AccountStatusResponse = succeeded(AccountStatus, 'AccountStatusResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'The account’s credit balance, seats (connected users) and trial',
  description: 'No body (any body sent is ignored).',
  responses: { 200: jsonAnswer('The account status', AccountStatusResponse) },
});

export const apiAccountStatus: FunctionDefinition = {
  name: 'api-account-status',
  mount: 'functions',
  method: 'POST',
  body: 'none',
  policy: policies.connectedUser,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await getAccountStatus({ ctx: c.get('deps'), input: { accountId: callerKey(c).accountId } })) }, 200),
    );
  },
};
