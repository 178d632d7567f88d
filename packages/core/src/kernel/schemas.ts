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

/**
 * A whole number in a query string, written as decimal digits and nothing else: `0x10`, `1e2`,
 * `+5`, ` 5` and `5.0` are refused rather than read as 16, 100 or 5 (what `Number()` would do).
 * One issue per value, so a refusal names each problem once.
 */
export function queryInteger(range: { min: number; max: number; message: string }) {
  return z.string(whenGiven('must be a number')).transform((raw, ctx) => {
    let message: string | undefined;
    if (/^-?\d+\.\d+$/.test(raw)) message = 'must be a whole number';
    else if (/^-\d+$/.test(raw)) message = range.message;
    else if (!/^\d{1,16}$/.test(raw)) message = 'must be a number written in decimal digits';
    const value = Number(raw);
    if (!message && (value < range.min || value > range.max)) message = range.message;
    if (message) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return value;
  });
}

/** A page size in a query: 1 to 500 (each listing adds its default, or leaves it optional). */
export const PageLimit = queryInteger({ min: 1, max: 500, message: 'must be between 1 and 500' }).openapi({
  type: 'integer',
  minimum: 1,
  maximum: 500,
});

/** Rows to skip in a query. */
export const PageOffset = queryInteger({ min: 0, max: 10_000_000, message: 'must be 0 or more' }).openapi({
  type: 'integer',
  minimum: 0,
  maximum: 10_000_000,
});

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2})(?::?(\d{2}))?)?)?$/;

/** Whether `text` is an ISO 8601 date or date-time naming a real instant (no 30 February, no 24:00). */
function isRealInstant(text: string): boolean {
  const m = ISO_INSTANT.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second, , offsetHours, offsetMinutes] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
  if (month === undefined || day === undefined || year === undefined) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (days === undefined || day < 1 || day > days) return false;
  return (hour ?? 0) <= 23 && (minute ?? 0) <= 59 && (second ?? 0) <= 59 && (offsetHours ?? 0) <= 23 && (offsetMinutes ?? 0) <= 59;
}

/** An ISO 8601 date or date-time in a query (`2026-11-01`, `2026-11-01T09:30:00Z`, with an offset or not), on the calendar. */
export const QueryInstant = z
  .string(whenGiven('must be an ISO 8601 date or date-time'))
  .refine((v) => v.length <= 40 && isRealInstant(v), 'must be an ISO 8601 date or date-time on the calendar')
  .openapi({ type: 'string', format: 'date-time' });

type ZodIssueLike = { path: PropertyKey[]; message: string; code?: string };

/** Turns zod issues into one sentence a developer can act on. */
export function describeValidationIssues(issues: readonly ZodIssueLike[]): string {
  const parts = issues.slice(0, 5).map((i) => {
    const field = i.path.map(String).join('.') || 'body';
    if (i.code === 'invalid_type' && /received undefined/.test(i.message)) return `${field} is required`;
    if (i.code === 'unrecognized_keys') {
      // Inside a nested object the message alone would not say where: `template: unknown field(s) …`.
      const message = i.message.replace(/^Unrecognized keys?/, 'unknown field(s)');
      return i.path.length ? `${field}: ${message}` : message;
    }
    return `${field}: ${i.message}`;
  });
  return parts.join('; ');
}
