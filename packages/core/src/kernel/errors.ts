/**
 * The one error class, and the one table of reasons. A verb raises a reason — a stable `code` a
 * client can branch on — with a message for people; the table alone decides the HTTP status, and
 * the HTTP layer renders `{ success: false, error, code }` with it. Anything else is unexpected → 500.
 */
export const ERROR_CODES = {
  // The first code of each status is its generic reason: what an SQL failure of that status, or a
  // framework's error, means when nothing more specific is said (genericCode).
  invalid_request: { status: 400, meaning: 'The request is malformed, or a field, header or value breaks its rule; the message names it' },
  unauthorized: { status: 401, meaning: 'No credential, or one that is unknown, revoked or inactive' },
  insufficient_credits: { status: 402, meaning: 'The account’s credit balance does not cover the request' },
  insufficient_ids: {
    status: 402,
    meaning: 'The partner pool has no identifications left, or cannot fund a new child (no pool, or a prepaid pool that is empty)',
  },
  insufficient_topup: { status: 402, meaning: 'The partner’s top-up balance is below the amount to transfer' },
  forbidden: { status: 403, meaning: 'The credential is valid but may not do this, or the resource belongs to someone else' },
  not_found: { status: 404, meaning: 'No such resource (or endpoint)' },
  method_not_allowed: { status: 405, meaning: 'Wrong HTTP method; see Allow' },
  request_timeout: { status: 408, meaning: 'The request (its body) did not arrive in time; the connection is closed' },
  conflict: { status: 409, meaning: 'The current state does not allow the request; the message names what is in the way' },
  gone: { status: 410, meaning: 'The connect link was used already, or has expired' },
  payload_too_large: { status: 413, meaning: 'The request body is over the size limit' },
  idempotency_key_reused: { status: 422, meaning: 'x-idempotency-key was already used for a different request' },
  rate_limited: { status: 429, meaning: 'A request rate limit is reached; see Retry-After' },
  rotation_limit: { status: 429, meaning: 'The child key was rotated too often in the last 24 hours' },
  generation_limit: { status: 429, meaning: 'The account’s hourly allowance of ICP generations is used up; see Retry-After' },
  headers_too_large: { status: 431, meaning: 'The request headers are too large (answered by the Node host before the app)' },
  internal_error: { status: 500, meaning: 'An unexpected failure; retry (the message carries a request id)' },
  upstream_failed: { status: 502, meaning: 'A provider or the AI engine failed; the message names the step' },
  database_unavailable: { status: 503, meaning: 'The database cannot be reached right now; retry after Retry-After seconds' },
  ip_data_unavailable: { status: 503, meaning: 'IP identification is not configured on this deployment, or its local data did not load' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]['status'];

/** Every code, in the table's order (grouped by status). */
export const errorCodes = Object.keys(ERROR_CODES) as ErrorCode[];

/** The status a code is answered with. */
export const statusOf = (code: ErrorCode): ErrorStatus => ERROR_CODES[code].status;

/** The codes answered with `status`, in the table's order. */
export const codesOfStatus = (status: number): ErrorCode[] => errorCodes.filter((c) => ERROR_CODES[c].status === status);

/** A status's generic reason (its first code), or undefined for a status no error has. */
export const genericCode = (status: number): ErrorCode | undefined => codesOfStatus(status)[0];

export class AppError extends Error {
  /** The HTTP status, as the table gives it for `code`. */
  readonly status: ErrorStatus;
  constructor(
    /** The reason, stable for clients to branch on. */
    readonly code: ErrorCode,
    message: string,
    /** Extra top-level fields some errors carry (e.g. `recent_rotations_24h`). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. `Retry-After`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = statusOf(code);
  }
}

export const badRequest = (message: string) => new AppError('invalid_request', message);
export const unauthorized = (message: string) => new AppError('unauthorized', message);
export const forbidden = (message: string) => new AppError('forbidden', message);
export const notFound = (message: string) => new AppError('not_found', message);
export const conflict = (message: string) => new AppError('conflict', message);

/**
 * What a verb means by an SQL function's statuses where the generic reason is not it: an SQL
 * function knows statuses, a verb knows which reason its call's 402 or 429 is.
 */
export type SqlReasons = Partial<Record<ErrorStatus, ErrorCode>>;

const SQL_ERROR_CLASS = /^SL(\d{3})$/;

/**
 * SQL functions raise deliberate failures with SQLSTATE `SL<status>` (see migrations);
 * this turns such an error into an AppError — the reason `reasons` names for its status, else the
 * status's generic one — and leaves every other error (or a status no reason has) untouched.
 */
export function fromSqlError(err: unknown, reasons: SqlReasons = {}): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const sqlState = (err as { code?: unknown }).code;
  if (typeof sqlState !== 'string') return err;
  const m = SQL_ERROR_CLASS.exec(sqlState);
  if (!m?.[1]) return err;
  const status = Number(m[1]);
  const meant = reasons[status as ErrorStatus];
  const code = meant && statusOf(meant) === status ? meant : genericCode(status);
  if (!code) return err;
  const message = (err as { message?: unknown }).message;
  // Extra top-level response fields travel as a JSON object in the error's DETAIL.
  let extra: Record<string, unknown> = {};
  const detail = (err as { detail?: unknown }).detail;
  if (typeof detail === 'string' && detail.startsWith('{')) {
    try {
      extra = JSON.parse(detail) as Record<string, unknown>;
    } catch {
      extra = {};
    }
  }
  return new AppError(code, typeof message === 'string' ? message : 'request failed', extra);
}

/** Runs `fn`, translating deliberate SQL failures into AppErrors (with the reasons the caller means). */
export async function sqlCall<T>(fn: () => Promise<T>, reasons: SqlReasons = {}): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fromSqlError(err, reasons);
  }
}
