import { createRoute } from '@hono/zod-openapi';
import { ChildrenPage, type FunctionDefinition, jsonAnswer, ListChildrenInput, listChildren, openapi, partnerCtx, policies } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ListChildrenResponse = succeeded(ChildrenPage, 'ListChildrenResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'List the caller’s managed children',
  request: { query: ListChildrenInput },
  responses: { 200: jsonAnswer('The children', ListChildrenResponse) },
});

export const partnerListChildren: FunctionDefinition = {
  name: 'partner-list-children',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerRead,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await listChildren({ ctx: partnerCtx(c), input: c.req.valid('query') })) }, 200),
    );
  },
};
