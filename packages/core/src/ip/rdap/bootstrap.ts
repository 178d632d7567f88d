/**
 * Which RDAP server answers for an address: IANA's bootstrap registries (RFC 9224), `services` =
 * `[[prefixes...], [base URLs...]]`, the longest matching prefix winning. A shipped copy
 * (packages/core/data/rdap-bootstrap) answers from the start; IANA's current files replace it when
 * a refresh succeeds (at most once a refresh interval, never on a lookup's path).
 */
import shippedV4 from '../../../data/rdap-bootstrap/ipv4.json' with { type: 'json' };
import shippedV6 from '../../../data/rdap-bootstrap/ipv6.json' with { type: 'json' };
import { readBodyTextPrefix } from '../../kernel/net/bounded-body.ts';
import { parseCidr } from '../../kernel/net/ip.ts';
import type { RdapAddress } from './address-range.ts';

export interface BootstrapFiles {
  ipv4: unknown;
  ipv6: unknown;
}

export interface BootstrapService {
  version: 4 | 6;
  start: bigint;
  end: bigint;
  bits: number;
  /** Base URL, ending in `/`. */
  base: string;
}

export const SHIPPED_BOOTSTRAP: BootstrapFiles = { ipv4: shippedV4, ipv6: shippedV6 };

/** IANA's files; an operator may point elsewhere (a mirror). */
export const IANA_BOOTSTRAP_URLS = { ipv4: 'https://data.iana.org/rdap/ipv4.json', ipv6: 'https://data.iana.org/rdap/ipv6.json' } as const;

/** IANA's two files are a few KiB; this is room for growth, not for a hostile mirror. */
const BOOTSTRAP_MAX_BYTES = 256 * 1024;
/** At most this many prefixes are read from one file. */
const MAX_PREFIXES = 4096;

/**
 * The services of both files, or null when either is not a bootstrap file (a broken refresh then
 * leaves the current services in place). Entries that do not parse are skipped; a base URL must be
 * https, or http when the entry offers no https one.
 */
export function parseBootstrap(files: BootstrapFiles): BootstrapService[] | null {
  const v4 = parseFile(files.ipv4, 4);
  const v6 = parseFile(files.ipv6, 6);
  if (!v4?.length || !v6?.length) return null;
  // Longest prefix first, so the first match is the most specific.
  return [...v4, ...v6].sort((a, b) => b.bits - a.bits);
}

function parseFile(raw: unknown, version: 4 | 6): BootstrapService[] | null {
  if (typeof raw !== 'object' || raw === null || !Array.isArray((raw as { services?: unknown }).services)) return null;
  const out: BootstrapService[] = [];
  for (const entry of (raw as { services: unknown[] }).services) {
    if (!Array.isArray(entry) || !Array.isArray(entry[0]) || !Array.isArray(entry[1])) continue;
    const base = pickBase(entry[1]);
    if (!base) continue;
    for (const prefix of entry[0]) {
      if (out.length >= MAX_PREFIXES) return out;
      if (typeof prefix !== 'string') continue;
      const cidr = parseCidr(prefix);
      if (!cidr || cidr.version !== version) continue;
      const bits = Number(prefix.split('/')[1] ?? (version === 4 ? 32 : 128));
      out.push({ version, start: BigInt(cidr.start), end: BigInt(cidr.end), bits, base });
    }
  }
  return out;
}

function pickBase(urls: unknown[]): string | null {
  const valid = urls.filter((u): u is string => typeof u === 'string' && /^https?:\/\/[^\s/]+(\/\S*)?$/i.test(u));
  const chosen = valid.find((u) => u.toLowerCase().startsWith('https://')) ?? valid[0];
  if (!chosen) return null;
  try {
    const url = new URL(chosen);
    if (url.username || url.password || url.search || url.hash) return null;
    return url.href.endsWith('/') ? url.href : `${url.href}/`;
  } catch {
    return null;
  }
}

/** The servers for every address, replaceable in one assignment. */
export class RdapBootstrap {
  #services: BootstrapService[];
  #origins: Set<string>;

  constructor(services: BootstrapService[]) {
    this.#services = services;
    this.#origins = originsOf(services);
  }

  /** The base URL (ending in `/`) of the server for `address`, or null when no registry holds it. */
  serverFor(address: RdapAddress): string | null {
    for (const s of this.#services) {
      if (s.version === address.version && s.start <= address.value && address.value <= s.end) return s.base;
    }
    return null;
  }

  /** Every server's origin (`https://rdap.db.ripe.net`): where a redirect may lead. */
  origins(): ReadonlySet<string> {
    return this.#origins;
  }

  replace(services: BootstrapService[]): void {
    this.#services = services;
    // Servers the shipped copy named stay reachable by redirect: a registry's redirect to a peer
    // must not fail because a refresh briefly dropped one.
    this.#origins = new Set([...this.#origins, ...originsOf(services)]);
  }
}

function originsOf(services: BootstrapService[]): Set<string> {
  return new Set(services.map((s) => new URL(s.base).origin));
}

/**
 * IANA's current files, or null when they cannot be fetched, are too large or do not parse. Never
 * throws; bounded by `timeoutMs` and BOOTSTRAP_MAX_BYTES.
 */
export async function fetchBootstrap(
  fetchFn: typeof fetch,
  urls: { ipv4: string; ipv6: string },
  timeoutMs: number,
): Promise<BootstrapService[] | null> {
  const signal = AbortSignal.timeout(timeoutMs);
  const one = async (url: string): Promise<unknown> => {
    const res = await fetchFn(url, { headers: { Accept: 'application/json' }, signal, redirect: 'follow' });
    if (!res.ok) {
      res.body?.cancel().catch(() => undefined);
      return null;
    }
    const { text, complete } = await readBodyTextPrefix(res, BOOTSTRAP_MAX_BYTES);
    return complete ? (JSON.parse(text) as unknown) : null;
  };
  try {
    const [ipv4, ipv6] = await Promise.all([one(urls.ipv4), one(urls.ipv6)]);
    return parseBootstrap({ ipv4, ipv6 });
  } catch {
    return null;
  }
}
