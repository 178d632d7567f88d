import { z } from '@hono/zod-openapi';
import { parseIp } from './net/ip.ts';

/** The building blocks of the verbs' contracts: each value's rule, and its message, written once. */

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
export const WebhookUrl = z.string().max(2048);
export const DisplayName = z.string().max(200);
export const PositiveDays = z.number().int().min(1).max(3650);
export const Quota = z.number().int().min(0).max(1_000_000_000);
export const ChildStatus = z.enum(['active', 'suspended', 'revoked'], whenGiven('must be active, suspended or revoked'));

/** Query-string boolean: exactly `true` or `false`. */
export const QueryBoolean = z.enum(['true', 'false'], whenGiven('must be true or false')).transform((v) => v === 'true');

/**
 * An IPv4 or IPv6 address as a lookup takes it: surrounding space and `[…]` brackets are dropped and
 * IPv6 is lower-cased, so one address has one spelling in the caches. What the hand-written parser
 * (net/ip.ts) refuses is a 400.
 */
export const IpAddress = z
  .string()
  .max(64)
  .transform((raw, ctx) => {
    const text = raw.trim();
    const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
    const parsed = parseIp(bare);
    if (!parsed) {
      ctx.addIssue({ code: 'custom', message: 'must be an IPv4 or IPv6 address' });
      return z.NEVER;
    }
    return parsed.version === 4 ? bare : bare.toLowerCase();
  })
  .openapi({ type: 'string', description: 'IPv4 or IPv6 address', example: '17.253.144.10' });

/** A page size in a query: 1 to 500 (each listing adds its default, or leaves it optional). */
export const PageLimit = z.coerce
  .number(whenGiven('must be a number'))
  .int('must be a whole number')
  .min(1, 'must be between 1 and 500')
  .max(500, 'must be between 1 and 500')
  .openapi({ type: 'integer' });

/** Rows to skip in a query. */
export const PageOffset = z.coerce
  .number(whenGiven('must be a number'))
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(10_000_000, 'must be at most 10000000')
  .openapi({ type: 'integer' });
