import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Caller, CoreDeps } from '../kernel/context.ts';

/**
 * Read variables with `c.get(name)`, never `c.var`: Hono's `c.var` getter builds a fresh object
 * from the variable map on every access, which was a tenth of a cached lookup's CPU.
 */
export type HonoEnv = {
  Variables: {
    deps: CoreDeps;
    requestId: string;
    caller: Caller;
    /** The request body as text, read once by the request guard; route.ts parses and checks it. */
    bodyText: string;
  };
};
export type FunctionApp = OpenAPIHono<HonoEnv>;
