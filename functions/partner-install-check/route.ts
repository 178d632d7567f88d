import { createRoute } from '@hono/zod-openapi';
import {
  CheckInstallInput,
  checkInstall,
  errorResponse,
  type FunctionDefinition,
  InstallCheck,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const InstallCheckResponse = succeeded(InstallCheck, 'InstallCheckResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: whether a child’s tracker has sent a page view (the console’s install check)',
  request: { query: CheckInstallInput },
  responses: {
    200: jsonAnswer('What the tracker has sent', InstallCheckResponse),
    404: errorResponse('No such child key', ['not_found']),
  },
});

export const partnerInstallCheck: FunctionDefinition = {
  name: 'partner-install-check',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerRead,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await checkInstall({ ctx: partnerCtx(c), input: c.req.valid('query') })) }, 200),
    );
  },
};
