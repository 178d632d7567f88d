import { createRoute } from '@hono/zod-openapi';
import { callerKey, ErasureInput, ErasureReport, erasePersonalData, type FunctionDefinition, jsonAnswer, openapi, policies } from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const ErasureResponse = succeeded(ErasureReport, 'ErasureResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Erase one address or one person from everything the account holds (a data-protection request)',
  description:
    'Give exactly one of `ip` and `linkedin_url`. An address: the raw tracker events, sessions, visitors, identifications (with their ICP scores), cached and recorded lookups and webhook events that name it are deleted, and the account’s debits lose it. A person: the identifications that name them lose the person and stay the company identification they also are; the messages written to them, the connected user they are, and the webhook events and idempotency outcomes that name them are deleted. One transaction; the answer counts what went per table (zeros when nothing named them). A key scoped to its own websites cannot erase (403).',
  request: { body: jsonBody(ErasureInput) },
  responses: { 200: jsonAnswer('What was erased, per table', ErasureResponse) },
});

export const apiErasePersonalData: FunctionDefinition = {
  name: 'api-erase-personal-data',
  mount: 'functions',
  method: 'POST',
  policy: policies.accountActor,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await erasePersonalData({ ctx: c.get('deps'), input: { ...c.req.valid('json'), accountId: callerKey(c).accountId } })),
        },
        200,
      ),
    );
  },
};
