import { z } from '@hono/zod-openapi';

/** Shared building blocks for the route contracts. */

export const Uuid = z.guid({ message: 'must be a uuid' }).openapi({ format: 'uuid', example: '6f1c1c84-8a1e-4a4e-9d0e-3c1c2f9a7b10' });

export const ErrorBody = z
  .object({ success: z.literal(false), error: z.string() })
  .openapi('Error', { description: 'Every error: `{ success: false, error }`' });

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorBody } },
});

/** Error responses every partner route can give. */
export const partnerErrors = {
  400: errorResponse('Validation error: missing required field or malformed value'),
  401: errorResponse('x-access-key missing, unknown, revoked or inactive'),
  403: errorResponse('Not the designated partner master key, not a partner account, or another partner’s resource'),
  405: errorResponse('Wrong HTTP method'),
  500: errorResponse('Internal error; retry'),
} as const;

export const errorResponses = { errorResponse };

export const accessKeyHeader = z.object({
  'x-access-key': z.string().optional().openapi({ description: 'The partner master key', example: 'sl_…' }),
});

/** Query-string boolean: exactly `true` or `false`. */
export const QueryBoolean = z
  .enum(['true', 'false'], { message: 'must be true or false' })
  .transform((v) => v === 'true');
