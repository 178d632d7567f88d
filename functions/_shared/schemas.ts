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
