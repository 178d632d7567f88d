import { type DnsResolver, type DnsServer, lookupAddress, reverseLookupName } from '@sightline/core/ip/reverse-dns';

/**
 * Deno's resolver for the reverse-DNS source: `Deno.resolveDns`, which asks one name server per
 * call, so DNS_SERVERS's servers are tried in order, the next one after a failure. With no servers
 * configured, the runtime's system resolver is asked. The source's signal ends every query at its
 * deadline.
 *
 * Two limits of `Deno.resolveDns` (Deno 2.x, measured against tests/support/dns-server.ts): it
 * reports SERVFAIL as `NotFound`, like NXDOMAIN, so a failing server reads as "no PTR" and is
 * remembered for an answer's time; and a server that never answers (or a closed port) is waited
 * for until the signal aborts, which leaves no budget for the next one. Name the most reliable
 * server first.
 */
export function createDenoDnsResolver(servers: DnsServer[]): DnsResolver {
  const ask = async (query: string, type: 'A' | 'AAAA' | 'PTR', signal: AbortSignal): Promise<string[]> => {
    const targets: (DnsServer | undefined)[] = servers.length > 0 ? servers : [undefined];
    let failure: unknown = new Error('no DNS server to ask');
    for (const server of targets) {
      signal.throwIfAborted();
      try {
        return await Deno.resolveDns(query, type, {
          signal,
          ...(server ? { nameServer: { ipAddr: server.address, port: server.port } } : {}),
        });
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return [];
        failure = signal.aborted ? signal.reason : err;
      }
    }
    throw failure;
  };
  return {
    reverse: (ip, signal) => {
      const address = lookupAddress(ip);
      if (!address) return Promise.reject(new Error(`${JSON.stringify(ip)} is not an IP address`));
      return ask(reverseLookupName(address), 'PTR', signal);
    },
    resolve: (name, type, signal) => ask(name, type, signal),
  };
}
