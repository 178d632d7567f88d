export { type HostBodyReader, MAX_BODY_BYTES } from './body.ts';
export type { FunctionDefinition } from './definition.ts';
export { errorBody, errorResponse, jsonAnswer, writtenJson } from './envelope.ts';
export type { FunctionApp, HonoEnv } from './hono-env.ts';
export { type Policy, policies, securitySchemes } from './policies.ts';
export { allowedMethods } from './request-guard.ts';
export { requestHeader } from './request-header.ts';
export { guardedErrors, openapi } from './route.ts';
export { callerKey, createApiServer, idempotentUserOf, partnerCtx } from './server.ts';
