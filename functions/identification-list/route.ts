import { createRoute, z } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  Identification,
  identificationsPageBody,
  jsonAnswer,
  ListIdentificationsInput,
  listIdentifications,
  openapi,
  policies,
  writtenJson,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const IdentificationListResponse = succeeded(z.object({ identifications: z.array(Identification) }), 'IdentificationListResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'The identifications of one of the account’s websites, newest first',
  request: { query: ListIdentificationsInput },
  responses: {
    200: jsonAnswer('A page of identifications', IdentificationListResponse),
    404: errorResponse('No such website for this key', ['not_found']),
  },
});

export const identificationList: FunctionDefinition = {
  name: 'identification-list',
  mount: 'root',
  method: 'GET',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) => {
      const page = await listIdentifications({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } });
      return writtenJson<z.infer<typeof IdentificationListResponse>>(c, identificationsPageBody(page));
    });
  },
};
