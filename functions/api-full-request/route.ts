import { createRoute, z } from '@hono/zod-openapi';
import {
  errorBody,
  errorResponse,
  FullRequestInput,
  type FunctionDefinition,
  idempotentUserOf,
  jsonAnswer,
  MessageProcessing,
  MessageResult,
  openapi,
  policies,
  requestFullMessage,
  writtenJson,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

/** HTTP 402, before any provider call: what the request needs and what the account has. */
export const NotEnoughCredits = errorBody(['insufficient_credits'], {
  credits_required: z.number().int(),
  credit_balance: z.number().int(),
}).openapi('NotEnoughCreditsError');

export const MessageResultResponse = succeeded(MessageResult, 'MessageResultResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Research a prospect and write them a personalised message, on behalf of a connected user',
  description:
    'Costs research 3 credits (skipped with `research_summary`) plus message 2 credits: held from the balance before any provider or engine is called, ' +
    'debited in the transaction that stores the message, given back if the work fails. ' +
    'The first request waits up to 25 s for the result, then answers 202 and finishes in the background. Repeating the request with the same ' +
    'x-idempotency-key answers 202 while it is in progress and the original result (the same bytes) once it is complete: never a second message ' +
    'or charge. A refusal (402, 403, 404) or a provider failure (502) gives the key back.',
  request: { body: jsonBody(FullRequestInput) },
  responses: {
    200: jsonAnswer('The message result (spec: Message result); a repeat answers the stored body byte for byte', MessageResultResponse),
    202: jsonAnswer('A request with this x-idempotency-key is in progress; repeat it with the same key and body for the result', MessageProcessing),
    400: errorResponse(
      'Validation error naming the field and rule: prospect_url not a personal profile URL (https://[www.]linkedin.com/in/<slug>), a field too long, an unknown field',
      ['invalid_request'],
    ),
    402: jsonAnswer(
      'The balance, less what requests still at work hold, does not cover research and message; refused before any provider or engine is called',
      NotEnoughCredits,
    ),
    403: errorResponse('x-user-id is not connected to the key’s account, or product_id is a product of another account', ['forbidden']),
    404: errorResponse('product_id names no product', ['not_found']),
    422: errorResponse('x-idempotency-key was already used for a different request', ['idempotency_key_reused']),
    502: errorResponse('The research provider or the AI engine failed; the message names the step. Nothing was charged; the key may be reused', [
      'upstream_failed',
    ]),
  },
});

export const apiFullRequest: FunctionDefinition = {
  name: 'api-full-request',
  mount: 'functions',
  method: 'POST',
  policy: policies.idempotentConnectedUser,
  register(app) {
    openapi(app, route, async (c) => {
      const caller = idempotentUserOf(c);
      const outcome = await requestFullMessage({
        ctx: c.get('deps'),
        input: { accountId: caller.key.accountId, userId: caller.userId, idempotencyKey: caller.idempotencyKey, request: c.req.valid('json') },
      });
      if (outcome.status === 202) return c.json(outcome.body, 202);
      // The JSON text sl_complete_message wrote and the key keeps: answered as stored, now and on every repeat.
      return writtenJson<z.infer<typeof MessageResultResponse>>(c, outcome.body);
    });
  },
};
