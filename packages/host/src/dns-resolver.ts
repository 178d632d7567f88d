import { Resolver } from 'node:dns/promises';
import { type DnsResolver, type DnsServer, dnsServerText } from '@sightline/core/ip/reverse-dns/index';

export interface NodeDnsResolverOptions {
  /** DNS_SERVERS, parsed; empty: the system's resolvers (/etc/resolv.conf). */
  servers: DnsServer[];
  /** One query's timeout (c-ares `timeout`); each query is tried once. */
  timeoutMs: number;
}

/** DNS answered that there is nothing: an answer (an empty list), not a failure. */
const NOTHING = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * Node's resolver for the reverse-DNS source: node:dns/promises `Resolver` (c-ares, which talks to
 * the servers itself, not through getaddrinfo's thread pool) with `{ timeout, tries: 1 }`, so a
 * dead server costs one timeout, not c-ares's default four tries. Each call has its own Resolver,
 * because `cancel()` cancels every query of a Resolver and an abort must end only its own.
 */
export function createNodeDnsResolver(options: NodeDnsResolverOptions): DnsResolver {
  const servers = options.servers.map(dnsServerText);
  const run = async <T>(signal: AbortSignal, query: (resolver: Resolver) => Promise<T[]>): Promise<T[]> => {
    signal.throwIfAborted();
    const resolver = new Resolver({ timeout: options.timeoutMs, tries: 1 });
    if (servers.length > 0) resolver.setServers(servers);
    const cancel = () => resolver.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await query(resolver);
    } catch (err) {
      if (NOTHING.has((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw signal.aborted ? signal.reason : err;
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  };
  return {
    reverse: (ip, signal) => run(signal, (r) => r.reverse(ip)),
    resolve: (name, type, signal) => run(signal, (r) => (type === 'A' ? r.resolve4(name) : r.resolve6(name))),
  };
}
