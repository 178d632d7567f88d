import { createRoute, z } from '@hono/zod-openapi';
import { type CoreDeps, type FunctionDefinition, jsonAnswer, openapi, policies } from '@sightline/core';

/**
 * A scheduled sweep as a function: POST with the sweep token, no body; it runs the sweep verb once,
 * logs how long it took, and answers `{ success, sweep, result }`.
 */
export function sweepFunction<T extends z.ZodRawShape>(opts: {
  name: string;
  sweep: string;
  summary: string;
  description: string;
  /** The verb's report, and its name in the document. */
  result: z.ZodObject<T>;
  resultName: string;
  /** The sweep identifies IPs (the Supabase function then ships the local IP data). */
  usesIpData?: boolean;
  run(deps: CoreDeps): Promise<z.infer<z.ZodObject<T>>>;
}): FunctionDefinition {
  const answer = z.object({ success: z.literal(true), sweep: z.literal(opts.sweep), result: opts.result }).openapi(opts.resultName);
  const route = createRoute({
    method: 'post',
    path: '/',
    summary: opts.summary,
    description: opts.description,
    responses: { 200: jsonAnswer('What the sweep did', answer) },
  });
  return {
    name: opts.name,
    mount: 'functions',
    method: 'POST',
    body: 'none',
    policy: policies.sweep,
    usesIpData: opts.usesIpData === true,
    register(app) {
      openapi(app, route, async (c) => {
        const deps = c.get('deps');
        const started = Date.now();
        const result = await opts.run(deps);
        deps.log.info('sweep finished', { sweep: opts.sweep, ms: Date.now() - started, result });
        // The body is `answer`'s shape by construction; Hono cannot relate a generic schema's
        // inferred type to the route's typed response, hence the cast.
        return c.json({ success: true as const, sweep: opts.sweep, result }, 200) as never;
      });
    },
  };
}
