import { createRoute, z } from '@hono/zod-openapi';
import { type FunctionDefinition, jsonAnswer, openapi, policies } from '@sightline/core';
import { type Sweep, sweepFunctionName } from './schedule.ts';

/**
 * A scheduled sweep (a row of schedule.ts) as a function: POST with the sweep token, no body; it runs
 * the sweep's verb once, logs how long it took, and answers `{ success, sweep, result }`.
 */
export function sweepFunction<T extends z.ZodRawShape>(s: Sweep<T>): FunctionDefinition {
  const answer = z.object({ success: z.literal(true), sweep: z.literal(s.sweep), result: s.result }).openapi(s.resultName);
  const route = createRoute({
    method: 'post',
    path: '/',
    summary: s.summary,
    description: s.description,
    responses: { 200: jsonAnswer('What the sweep did', answer) },
  });
  return {
    name: sweepFunctionName(s),
    mount: 'functions',
    method: 'POST',
    body: 'none',
    policy: policies.sweep,
    usesIpData: s.usesIpData === true,
    register(app) {
      openapi(app, route, async (c) => {
        const deps = c.get('deps');
        const started = Date.now();
        const result = await s.run(deps);
        deps.log.info('sweep finished', { sweep: s.sweep, ms: Date.now() - started, result });
        // The body is `answer`'s shape by construction; Hono cannot relate a generic schema's
        // inferred type to the route's typed response, hence the cast.
        return c.json({ success: true as const, sweep: s.sweep, result }, 200) as never;
      });
    },
  };
}
