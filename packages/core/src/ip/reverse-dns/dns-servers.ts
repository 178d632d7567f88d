import { parseIPv4, parseIPv6 } from '../../kernel/net/ip.ts';

/** One DNS server the reverse lookups ask, as DNS_SERVERS names it. */
export interface DnsServer {
  /** An IP address (both hosts' resolvers take addresses only, never a name to look up first). */
  address: string;
  family: 4 | 6;
  port: number;
}

const PORT = /^\d{1,5}$/;
const EXAMPLE = 'e.g. 9.9.9.9,1.1.1.1:53,[2620:fe::fe]:53';

/**
 * DNS_SERVERS's rules: comma-separated `host[:port]`, where host is an IPv4 address or an IPv6
 * address in brackets (`[2001:db8::53]:5353`; a bare IPv6 address is refused because its last
 * group cannot be told from a port), and port is 1–65535 (53 when left out). Empty or unset means
 * the system's resolvers: an empty list. Anything else is refused with the entry it is about, so
 * start-up can say which one to fix.
 */
export function parseDnsServers(text: string | undefined): DnsServer[] | { refused: string } {
  const entries = (text ?? '').split(',').map((e) => e.trim());
  if (entries.every((e) => e === '')) return [];
  const servers: DnsServer[] = [];
  for (const entry of entries) {
    if (entry === '') return { refused: `has an empty entry; give comma-separated host[:port] addresses, ${EXAMPLE}` };
    const server = parseDnsServer(entry);
    if ('refused' in server) return { refused: `entry "${entry}" ${server.refused}` };
    servers.push(server);
  }
  return servers;
}

function parseDnsServer(entry: string): DnsServer | { refused: string } {
  let host = entry;
  let portText: string | null = null;
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0) return { refused: 'opens a bracket it does not close; write an IPv6 server as [2001:db8::53]:53' };
    host = entry.slice(1, close);
    const rest = entry.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return { refused: 'has text after the bracketed address; only :port may follow it' };
      portText = rest.slice(1);
    }
    if (parseIPv6(host) === null) return { refused: 'is not an IPv6 address in brackets' };
  } else {
    const colons = entry.split(':').length - 1;
    if (colons > 1) return { refused: 'looks like an IPv6 address: write it in brackets, e.g. [2620:fe::fe] or [2620:fe::fe]:53' };
    if (colons === 1) {
      host = entry.slice(0, entry.indexOf(':'));
      portText = entry.slice(entry.indexOf(':') + 1);
    }
    if (parseIPv4(host) === null) {
      return { refused: `is not an IP address (a resolver is named by its address, not a host name), ${EXAMPLE}` };
    }
  }
  let port = 53;
  if (portText !== null) {
    port = PORT.test(portText) ? Number(portText) : Number.NaN;
    if (!(port >= 1 && port <= 65535)) return { refused: 'has a port that is not a number from 1 to 65535' };
  }
  return { address: host.toLowerCase(), family: entry.startsWith('[') ? 6 : 4, port };
}

/** A server as Node's `Resolver.setServers` takes it: `a.b.c.d:port` or `[v6]:port`. */
export function dnsServerText(server: DnsServer): string {
  return server.family === 6 ? `[${server.address}]:${server.port}` : `${server.address}:${server.port}`;
}
