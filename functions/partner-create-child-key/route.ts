import { createRoute } from '@hono/zod-openapi';
import {
  CreateChildKeyInput,
  CreatedChild,
  createChildKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const CreateChildResponse = succeeded(CreatedChild, 'CreateChildResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Provision a managed child: phantom user, key, website and 30-day subscription',
  request: { body: jsonBody(CreateChildKeyInput) },
  responses: {
    201: jsonAnswer('The child, its key (shown once) and webhook secret (shown once)', CreateChildResponse),
    402: errorResponse('The pool is on prepaid billing with an empty balance', ['insufficient_ids']),
    409: errorResponse(
      'Domain already live on an active website; on monthly-invoice billing also no saved card, no per-ID rate, or an outstanding invoice',
      ['conflict'],
    ),
  },
});

export const partnerCreateChildKey: FunctionDefinition = {
  name: 'partner-create-child-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await createChildKey({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 201),
    );
  },
};
