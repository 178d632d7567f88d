import { createRoute } from '@hono/zod-openapi';
import {
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  PartnerBrand,
  partnerCtx,
  policies,
  SetPartnerBrandInput,
  setPartnerBrand,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const SetBrandResponse = succeeded(PartnerBrand, 'SetBrandResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: the partner’s white-label brand for the console (name, accent colour, logo URL)',
  description: 'A field given is set and null clears it; a field omitted stays. The partner’s children see the accent and logo in the console.',
  request: { body: jsonBody(SetPartnerBrandInput) },
  responses: { 200: jsonAnswer('The brand now', SetBrandResponse) },
});

export const partnerSetBrand: FunctionDefinition = {
  name: 'partner-set-brand',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await setPartnerBrand({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
