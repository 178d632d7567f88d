/**
 * The one error class. A verb throws an AppError for every expected failure; the HTTP layer
 * renders it as `{ success: false, error }` with `status`. Anything else is unexpected → 500.
 */
export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 408 | 409 | 410 | 413 | 415 | 422 | 429 | 500 | 502 | 503;

export class AppError extends Error {
  constructor(
    readonly status: ErrorStatus,
    message: string,
    /** Extra top-level fields some errors carry (e.g. `recent_rotations_24h`). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. `Retry-After`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string) => new AppError(400, message);
export const unauthorized = (message: string) => new AppError(401, message);
export const forbidden = (message: string) => new AppError(403, message);
export const notFound = (message: string) => new AppError(404, message);
export const conflict = (message: string) => new AppError(409, message);

const SQL_ERROR_CLASS = /^SL(\d{3})$/;

/**
 * SQL functions raise deliberate failures with SQLSTATE `SL<status>` (see migrations);
 * this turns such an error into an AppError and leaves every other error untouched.
 */
export function fromSqlError(err: unknown): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return err;
  const m = SQL_ERROR_CLASS.exec(code);
  if (!m?.[1]) return err;
  const status = Number(m[1]) as ErrorStatus;
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
  return new AppError(status, typeof message === 'string' ? message : 'request failed', extra);
}

/** Runs `fn`, translating deliberate SQL failures into AppErrors. */
export async function sqlCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fromSqlError(err);
  }
}
