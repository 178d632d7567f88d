import { z } from '@hono/zod-openapi';

/** Shared building blocks for the route contracts. */

/**
 * A custom message for a value that was given but is wrong; a missing value keeps zod's own
 * message, which the error renderer turns into "<field> is required".
 */
export const whenGiven = (message: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? undefined : message),
});

export const Uuid = z.guid(whenGiven('must be a uuid')).openapi({ format: 'uuid', example: '6f1c1c84-8a1e-4a4e-9d0e-3c1c2f9a7b10' });

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

/** Error responses of partner routes that pass the rate limit and the out-of-IDs guard. */
export const limitedPartnerErrors = {
  ...partnerErrors,
  402: errorResponse('The partner pool has no identifications left'),
  429: errorResponse('API-wide rate limit reached; see Retry-After'),
} as const;

export const Timestamp = z.string().openapi({ format: 'date-time' });
export const WebhookSecret = z.string().min(8, 'must be at least 8 characters').max(256);
export const PositiveDays = z.number().int().min(1).max(3650);
export const Quota = z.number().int().min(0).max(1_000_000_000);
export const ChildStatus = z.enum(['active', 'suspended', 'revoked'], whenGiven('must be active, suspended or revoked'));

/** A JSON POST body for a route. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});


/** Query-string boolean: exactly `true` or `false`. */
export const QueryBoolean = z
  .enum(['true', 'false'], whenGiven('must be true or false'))
  .transform((v) => v === 'true');
