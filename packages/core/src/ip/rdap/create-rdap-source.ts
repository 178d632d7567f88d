import { type Logger, silentLogger } from '../../kernel/context.ts';
import type { SourceAnswer } from '../types.ts';
import { addressValue, blockOf, intersect, publicAddress, type RdapAddress, rangeKey } from './address-range.ts';
import { fetchBootstrap, parseBootstrap, RdapBootstrap, SHIPPED_BOOTSTRAP } from './bootstrap.ts';
import { interpretNetwork, type RoutingOwner } from './interpret-network.ts';
import { type KnownRange, RangeMemory, type RdapStore } from './network-cache.ts';
import { DEFAULT_RDAP_OPTIONS, type RdapOptions } from './rdap-options.ts';
import type { RdapNetwork } from './read-network.ts';
import { registrationType } from './registration-policy.ts';
import { type NetworkOutcome, requestNetwork } from './request-network.ts';
import { retryAfterMs, ServerBudgets } from './server-budget.ts';

/** What the host lends the RDAP source: all optional, so a test can run it on fetch alone. */
export interface RdapDeps {
  /** The durable cache (network-cache.ts, `postgresRdapStore`); absent, answers live in memory only. */
  store?: RdapStore;
  /** The HTTP client; the global fetch when absent (Node 20 and Deno both have it). */
  fetch?: typeof fetch;
  now?: () => number;
  /**
   * Runs work after the lookup answered (CoreDeps.background). With it, a lookup the budget refused
   * queues its address and the cache fills behind; without it, nothing is fetched but on a lookup.
   */
  background?: (name: string, task: () => Promise<unknown>) => void;
  log?: Logger;
}

export interface RdapSource {
  readonly name: 'rdap';
  /**
   * RDAP's vote on `ip` (interpret-network.ts), or null when it has none or does not know yet.
   * Never throws, never waits longer than `timeoutMs`, never waits on a budget.
   */
  lookup(ip: string, routing?: RoutingOwner | null): Promise<SourceAnswer | null>;
  /** Settles once the work this source started behind its lookups (fills, writes, refreshes) is done. */
  idle(): Promise<void>;
}

/**
 * The RDAP source (RFC 9082/9083): the registries' record of who holds the block an address is in.
 *
 * A lookup reads, in order: the in-process range memory (a hit is a map read and a short scan); the
 * store (rdap_networks), by the address; a request in flight for the same block, which it joins;
 * then, if the server's budget allows now, one query, its answer filed for the whole registered
 * range (an end-user assignment) or for the block it was asked about (a registration that may hold
 * smaller ones). Found or not, an answer is kept `ttlMs`; a failure is remembered for the block
 * `failureTtlMs` in memory only. Nothing waits on a budget: a refused lookup answers null at once
 * and, given `background`, its address is queued and the cache fills behind as the budget allows.
 * A 429 or 503 `Retry-After` pauses the server until then; a server that fails is paused
 * `outagePauseMs`. Redirects lead only to servers the bootstrap names (or RDAP_BASE_URL's).
 */
export function createRdapSource(deps: RdapDeps = {}, options: RdapOptions = DEFAULT_RDAP_OPTIONS): RdapSource {
  const now = deps.now ?? Date.now;
  const fetchFn: typeof fetch = deps.fetch ?? ((input, init) => fetch(input, init));
  const log = deps.log ?? silentLogger;
  const services = parseBootstrap(options.bootstrap ?? SHIPPED_BOOTSTRAP);
  if (!services) throw new RangeError('the RDAP bootstrap names no IPv4 or no IPv6 server');
  const bootstrap = new RdapBootstrap(services);
  const baseUrl = options.baseUrl === null ? null : new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`).href;
  const budgets = new ServerBudgets((server) => options.serverBudgets[new URL(server).host] ?? options.budget, now);
  const memory = new RangeMemory(options.memoryBlocks, now);
  const inflight = new Map<string, Promise<void>>();
  const queues = new Map<string, Map<string, { address: RdapAddress; tries: number }>>();
  const draining = new Set<string>();
  const pending = new Set<Promise<void>>();
  let refreshedAt = Number.NEGATIVE_INFINITY;

  /** Work after the answer: handed to the host's background runner when there is one, tracked for `idle`. */
  const behind = (name: string, task: () => Promise<unknown>): void => {
    const done = new Promise<void>((resolve) => {
      const run = () =>
        task()
          .catch((err: unknown) => log.warn('rdap background task failed', { task: name, error: describe(err) }))
          .finally(resolve);
      if (deps.background) deps.background(name, run);
      else void run();
    });
    pending.add(done);
    void done.finally(() => pending.delete(done));
  };

  const refreshBootstrap = (): void => {
    if (baseUrl !== null || now() - refreshedAt < options.bootstrapRefreshMs) return;
    refreshedAt = now();
    behind('rdap-bootstrap', async () => {
      const fresh = await fetchBootstrap(fetchFn, options.bootstrapUrls, 10_000);
      if (fresh) bootstrap.replace(fresh);
      else log.info('rdap bootstrap not refreshed; the current copy stays', { urls: options.bootstrapUrls });
    });
  };

  const mayRedirectTo = (origin: string): 'yes' | 'not-named' | 'no-budget' => {
    const named = bootstrap.origins().has(origin) || (baseUrl !== null && new URL(baseUrl).origin === origin);
    if (!named) return 'not-named';
    return budgets.take(origin) ? 'yes' : 'no-budget';
  };

  const readStore = async (address: RdapAddress, key: string): Promise<KnownRange | null> => {
    if (!deps.store) return null;
    try {
      const row = await deps.store.read(address);
      if (!row) return null;
      memory.rememberRange(key, row, row.ttlMs, options.blockBits[row.range.version]);
      return row;
    } catch (err) {
      log.warn('rdap cache read failed', { error: describe(err) });
      return null;
    }
  };

  const keep = (key: string, known: KnownRange, server: string): void => {
    memory.rememberRange(key, known, options.ttlMs, options.blockBits[known.range.version]);
    const store = deps.store;
    if (store) behind('rdap-cache-write', () => store.write(known, server, options.ttlMs));
  };

  const settle = (outcome: NetworkOutcome, base: string, address: RdapAddress, key: string, tries: number): void => {
    const block = blockOf(address, options.blockBits[address.version]);
    switch (outcome.kind) {
      case 'network': {
        const { network } = outcome;
        const registered = { version: network.version, start: numberOf(network.startAddress), end: numberOf(network.endAddress) };
        // An allocation may hold customers' assignments we were not told of: trust it for this block only.
        const divisible = registrationType(network.type)?.divisible ?? true;
        const range = divisible ? (intersect(block, registered) ?? block) : registered;
        keep(key, { range, network }, outcome.server);
        return;
      }
      case 'absent':
        keep(key, { range: block, network: null }, outcome.server);
        return;
      case 'throttled':
        budgets.pauseUntil(outcome.server, now() + retryAfterMs(outcome.retryAfter, now(), options.defaultRetryAfterMs, options.maxPauseMs));
        log.info('rdap server asked to wait', { server: outcome.server, retry_after: outcome.retryAfter });
        // Retried behind only when the server asked is the one the queue waits on (a redirect's
        // target may be paused while its referrer is not), and only a few times.
        if (outcome.server === new URL(base).origin) enqueue(base, address, key, tries + 1);
        return;
      case 'deferred':
        // A redirect's target has no budget now: a later lookup asks again.
        return;
      case 'failed':
        memory.remember(key, { range: block, network: null }, options.failureTtlMs);
        if (outcome.outage) budgets.pauseUntil(outcome.server, now() + options.outagePauseMs);
        log.debug('rdap query failed', { server: outcome.server, reason: outcome.reason });
        return;
    }
  };

  /** One query for the block of `address`; concurrent lookups in the block join it. Never rejects. */
  const fill = (base: string, address: RdapAddress, key: string, tries = 0): Promise<void> => {
    const task = requestNetwork(base, address, {
      fetch: fetchFn,
      timeoutMs: options.timeoutMs,
      maxBodyBytes: options.maxBodyBytes,
      maxRedirects: options.maxRedirects,
      mayRedirectTo,
    })
      .then((outcome) => settle(outcome, base, address, key, tries))
      .catch((err: unknown) => log.warn('rdap query failed unexpectedly', { error: describe(err) }))
      .finally(() => {
        if (inflight.get(key) === task) inflight.delete(key);
      });
    inflight.set(key, task);
    // Tracked like the rest of the work behind (a lookup that stops waiting leaves it running).
    behind('rdap-query', () => task);
    return task;
  };

  const enqueue = (base: string, address: RdapAddress, key: string, tries = 0): void => {
    if (!deps.background || tries > MAX_BACKGROUND_TRIES) return;
    let queue = queues.get(base);
    if (!queue) {
      queue = new Map();
      queues.set(base, queue);
    }
    if (!queue.has(key) && queue.size >= options.maxQueuedPerServer) return;
    queue.set(key, { address, tries });
    if (draining.has(base)) return;
    draining.add(base);
    behind('rdap-fill', () => drain(base).finally(() => draining.delete(base)));
  };

  /** Fills the queued blocks of one server as its budget allows, skipping what became known meanwhile. */
  const drain = async (base: string): Promise<void> => {
    const origin = new URL(base).origin;
    const queue = queues.get(base);
    while (queue?.size) {
      const wait = budgets.waitMs(origin);
      // A long pause is left to a later lookup's enqueue, which starts a new drain.
      if (wait > options.maxBackgroundWaitMs) return;
      if (wait > 0) await sleep(wait);
      const next = queue.entries().next();
      if (next.done) return;
      const [key, { address, tries }] = next.value;
      if (memory.find(key, address) || (await readStore(address, key))) {
        queue.delete(key);
        continue;
      }
      const running = inflight.get(key);
      if (running) {
        queue.delete(key);
        await running;
        continue;
      }
      if (!budgets.take(origin)) continue;
      queue.delete(key);
      await fill(base, address, key, tries);
    }
  };

  // A network's reading for a routing owner, kept beside the network: a cache hit then costs no
  // name comparison or domain parsing (each network meets one or two routing owners).
  const readings = new WeakMap<RdapNetwork, Map<string, SourceAnswer | null>>();
  const answer = (known: KnownRange | null | undefined, routing: RoutingOwner | null): SourceAnswer | null => {
    const network = known?.network;
    if (!network) return null;
    const key = routing === null ? '' : `${routing.name ?? ''}\u0000${routing.trafficType ?? ''}\u0000${(routing.domains ?? []).join(',')}`;
    let byRouting = readings.get(network);
    const cached = byRouting?.get(key);
    if (cached !== undefined) return cached === null ? null : { ...cached };
    const reading = interpretNetwork(network, routing);
    if (!byRouting || byRouting.size >= 8) {
      byRouting = new Map();
      readings.set(network, byRouting);
    }
    byRouting.set(key, reading);
    return reading === null ? null : { ...reading };
  };

  return {
    name: 'rdap',
    async lookup(ip, routing = null) {
      if (!options.enabled) return null;
      const address = publicAddress(ip);
      if (!address) return null;
      refreshBootstrap();
      const key = rangeKey(blockOf(address, options.blockBits[address.version]));
      const hit = memory.find(key, address);
      if (hit) return answer(hit, routing);

      const deadline = now() + options.timeoutMs;
      const stored = await within(readStore(address, key), deadline - now());
      if (stored) return answer(stored, routing);
      // The store read yielded: a query for this block may have started and even finished meanwhile.
      const filled = memory.find(key, address);
      if (filled) return answer(filled, routing);
      const running = inflight.get(key);
      if (running) {
        // Most often the registration it brings holds this address too; when it does not (a
        // customer's /26 beside ours), there may still be time to ask.
        await within(running, deadline - now());
        const known = memory.find(key, address);
        if (known || now() >= deadline) return answer(known, routing);
      }
      const base = baseUrl ?? bootstrap.serverFor(address);
      if (base === null) return null;
      if (!budgets.take(new URL(base).origin)) {
        enqueue(base, address, key);
        return null;
      }
      await within(fill(base, address, key), deadline - now());
      return answer(memory.find(key, address), routing);
    },
    async idle() {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}

/** How often a throttled address is queued again before it is left to a later lookup. */
const MAX_BACKGROUND_TRIES = 3;

/** `p`, or undefined once `ms` have passed (p goes on; its result lands in the caches). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  if (ms <= 0) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function numberOf(text: string): bigint {
  return addressValue(text)?.value ?? 0n;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
