import { BoundedLru } from '../../kernel/lru.ts';
import type { SourceAnswer } from '../types.ts';
import { classifyReverseName, RDNS_SOURCE } from './classify-reverse-name.ts';
import { confirmReverseName } from './confirm-reverse-name.ts';
import { type DnsResolver, formatAddress, lookupAddress } from './dns-resolver.ts';
import { type RdnsDomainList, SHIPPED_RDNS_DOMAINS } from './rdns-domains.ts';
import { RDNS_MAX_TIMEOUT_MS } from './reverse-dns-options.ts';

/** How long an answer is kept (a confirmed name, or DNS saying there is none): PTRs change rarely. */
export const RDNS_ANSWER_TTL_MS = 6 * 60 * 60 * 1000;
/** How long a failure is kept (timeout, SERVFAIL): long enough that a dead resolver is not asked per visitor. */
export const RDNS_FAILURE_TTL_MS = 30 * 60 * 1000;
export const RDNS_CACHE_MAX_ENTRIES = 100_000;
/** Lookups on the wire at once; past it an address gets no vote rather than a place in a queue. */
export const RDNS_MAX_IN_FLIGHT = 256;

export interface ReverseDnsSourceOptions {
  resolver: DnsResolver;
  /** The budget of one lookup, PTR and forward confirmation together; at most RDNS_MAX_TIMEOUT_MS. */
  timeoutMs?: number;
  domains?: RdnsDomainList;
  maxEntries?: number;
  answerTtlMs?: number;
  failureTtlMs?: number;
  maxInFlight?: number;
  now?: () => number;
}

/** The forward-confirmed reverse DNS source: one vote per address, from memory when it can. */
export interface ReverseDnsSource {
  readonly name: typeof RDNS_SOURCE;
  /**
   * The source's answer for `ip`, or null when it has nothing to say: no PTR, a PTR that does not
   * confirm, DNS failing or too slow, text that is not an address. Never rejects and never waits
   * past its timeout (nor past `signal`, which ends only this caller's wait: the query goes on and
   * fills the cache for the next visitor).
   */
  lookup(ip: string, signal?: AbortSignal): Promise<SourceAnswer | null>;
}

interface Cached {
  answer: SourceAnswer | null;
  expiresAt: number;
}

/**
 * Builds the reverse-DNS source over the host's resolver. Answers and failures are kept in an
 * in-process LRU per address (a hit is a map read), and concurrent lookups of one address share
 * one query, so a burst of beacons from one office costs one PTR and one forward query. What
 * leaves the server is the visitor's address (the PTR query) and the names it returns (the
 * forward queries), to the operator's resolver.
 */
export function createReverseDnsSource(options: ReverseDnsSourceOptions): ReverseDnsSource {
  const timeoutMs = options.timeoutMs ?? RDNS_MAX_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > RDNS_MAX_TIMEOUT_MS) {
    throw new RangeError(`rDNS timeoutMs must be an integer from 1 to ${RDNS_MAX_TIMEOUT_MS}, got ${timeoutMs}`);
  }
  const { resolver } = options;
  const domains = options.domains ?? SHIPPED_RDNS_DOMAINS;
  const answerTtlMs = options.answerTtlMs ?? RDNS_ANSWER_TTL_MS;
  const failureTtlMs = options.failureTtlMs ?? RDNS_FAILURE_TTL_MS;
  const maxInFlight = options.maxInFlight ?? RDNS_MAX_IN_FLIGHT;
  const now = options.now ?? Date.now;
  const cache = new BoundedLru<Cached>(options.maxEntries ?? RDNS_CACHE_MAX_ENTRIES);
  const inFlight = new Map<string, Promise<SourceAnswer | null>>();

  const ask = async (key: string, address: NonNullable<ReturnType<typeof lookupAddress>>): Promise<SourceAnswer | null> => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // A resolver that ignores its signal is abandoned at the deadline all the same.
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error(`reverse DNS timed out after ${timeoutMs} ms`));
        resolve('timeout');
      }, timeoutMs);
    });
    let cached: Cached;
    try {
      const work = confirmReverseName(key, resolver, controller.signal).then((name) => (name ? classifyReverseName(name, address, domains) : null));
      const outcome = await Promise.race([work, deadline]);
      if (outcome === 'timeout') {
        work.catch(() => {}); // its rejection after the abort is expected and already accounted for
        cached = { answer: null, expiresAt: now() + failureTtlMs };
      } else {
        cached = { answer: outcome, expiresAt: now() + answerTtlMs };
      }
    } catch {
      cached = { answer: null, expiresAt: now() + failureTtlMs };
    } finally {
      clearTimeout(timer);
    }
    cache.set(key, cached);
    return cached.answer;
  };

  return {
    name: RDNS_SOURCE,
    async lookup(ip, signal) {
      const address = lookupAddress(ip);
      if (!address) return null;
      const key = formatAddress(address);
      const hit = cache.get(key);
      if (hit && hit.expiresAt > now()) return copy(hit.answer);
      let pending = inFlight.get(key);
      if (!pending) {
        if (inFlight.size >= maxInFlight) return null;
        pending = ask(key, address).finally(() => inFlight.delete(key));
        inFlight.set(key, pending);
      }
      return copy(await untilAborted(pending, signal));
    },
  };
}

/** Each caller gets its own object, so no caller can change what the next one is told. */
function copy(answer: SourceAnswer | null): SourceAnswer | null {
  return answer ? { ...answer } : null;
}

/** `pending`'s value, or null as soon as `signal` aborts (the work itself is not stopped). */
function untilAborted<T>(pending: Promise<T | null>, signal: AbortSignal | undefined): Promise<T | null> {
  if (!signal) return pending;
  if (signal.aborted) return Promise.resolve(null);
  let onAbort = (): void => {};
  const aborted = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([pending, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}
