/**
 * What this process may ask of each RDAP server: a token bucket per server (its origin), and a
 * pause when the server said to wait (429/503 `Retry-After`) or failed (no answer, a 5xx). The
 * registries rate-limit RDAP by client address and answer 429 past it, so the budget keeps us under
 * it and `Retry-After` decides the rest. A lookup never waits on a bucket: it asks `take` and,
 * refused, answers from what is known.
 */
export interface Budget {
  /** Requests a second the bucket refills at. */
  ratePerSecond: number;
  /** Requests that may go at once after a quiet spell. */
  burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
  pausedUntil: number;
}

export class ServerBudgets {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    private readonly budgetOf: (server: string) => Budget,
    private readonly now: () => number,
  ) {}

  /** Spends one request of `server`'s budget if it has one now (and is not paused). */
  take(server: string): boolean {
    const b = this.#refilled(server);
    if (b.pausedUntil > this.now() || b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** How long until `take` could succeed, in ms (0: now). */
  waitMs(server: string): number {
    const b = this.#refilled(server);
    const now = this.now();
    const { ratePerSecond } = this.budgetOf(server);
    const forToken = b.tokens >= 1 ? 0 : Math.ceil(((1 - b.tokens) / ratePerSecond) * 1000);
    return Math.max(b.pausedUntil - now, forToken, 0);
  }

  /** No request to `server` before `until` (a later pause wins over an earlier one). */
  pauseUntil(server: string, until: number): void {
    const b = this.#refilled(server);
    if (until > b.pausedUntil) b.pausedUntil = until;
  }

  #refilled(server: string): Bucket {
    const now = this.now();
    const { ratePerSecond, burst } = this.budgetOf(server);
    let b = this.#buckets.get(server);
    if (!b) {
      b = { tokens: burst, at: now, pausedUntil: 0 };
      this.#buckets.set(server, b);
      return b;
    }
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * ratePerSecond);
    b.at = now;
    return b;
  }
}

/**
 * A `Retry-After` value (seconds, or an HTTP date) as milliseconds from `now`, within [0, max]; the
 * fallback when it is absent or unreadable.
 */
export function retryAfterMs(header: string | null, now: number, fallbackMs: number, maxMs: number): number {
  const text = header?.trim() ?? '';
  let ms = fallbackMs;
  if (/^\d{1,10}$/.test(text)) ms = Number(text) * 1000;
  else if (text) {
    const at = Date.parse(text);
    if (Number.isFinite(at)) ms = at - now;
  }
  return Math.min(Math.max(ms, 0), maxMs);
}
