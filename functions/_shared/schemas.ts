import { z } from '@hono/zod-openapi';

/**
 * What the routes add to the verbs' contracts (packages/core): the JSON body wrapper and the
 * success envelope. The contracts themselves are written once, beside their verbs.
 */

/** A JSON POST body for a route. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

/** A verb's result in the success envelope, `{ success: true, ...result }`, named in the document. */
export const succeeded = <T extends z.ZodRawShape>(result: z.ZodObject<T>, name: string) =>
  z
    .object({ success: z.literal(true) })
    .extend(result.shape)
    .openapi(name);
