import { BoundedLru } from '../../kernel/lru.ts';
import type { Sql } from '../../kernel/sql.ts';
import { type AddressRange, addressValue, contains, formatAddress, type RdapAddress, rangeKey } from './address-range.ts';
import type { RdapNetwork } from './read-network.ts';

/**
 * What is known about a range of addresses: every address in `range` has `network` as its most
 * specific registration (null: the registry holds none). A registration that cannot hold smaller
 * ones covers its whole registered range; one that can (an allocation) covers only the block it was
 * asked about (create-rdap-source.ts).
 */
export interface KnownRange {
  range: AddressRange;
  network: RdapNetwork | null;
}

/** The durable tier: one row per known range, unexpired rows only. */
export interface RdapStore {
  /** The most specific unexpired range holding `address`, with the time it has left. */
  read(address: RdapAddress): Promise<(KnownRange & { ttlMs: number }) | null>;
  write(known: KnownRange, server: string, ttlMs: number): Promise<void>;
}

interface Entry extends KnownRange {
  expiresAt: number;
}

/** At most this many known ranges are kept per block: nested registrations inside one /24 are few. */
const ENTRIES_PER_BLOCK = 16;
/** The most blocks one range is filed under. */
const MAX_FAN_OUT = 256;

/**
 * The in-process tier in front of the store: known ranges filed under the block (the /24 or /48) of
 * the address that learnt them, so a hit is one map read and a scan of a few entries. A range larger
 * than the block is filed again under each block an address of it is looked up in (from the store).
 */
export class RangeMemory {
  readonly #blocks: BoundedLru<Entry[]>;

  constructor(
    maxBlocks: number,
    private readonly now: () => number,
  ) {
    this.#blocks = new BoundedLru(maxBlocks);
  }

  /** The most specific unexpired range holding `address`, from the entries of `blockKey`. */
  find(blockKey: string, address: RdapAddress): KnownRange | undefined {
    const entries = this.#blocks.get(blockKey);
    if (!entries) return undefined;
    const now = this.now();
    let best: Entry | undefined;
    for (const e of entries) {
      if (e.expiresAt <= now || !contains(e.range, address)) continue;
      if (!best || e.range.end - e.range.start < best.range.end - best.range.start) best = e;
    }
    return best;
  }

  /**
   * Files `known` under every block it spans, when they are few (a /16 is 256 /24s): a registered
   * network's other blocks then hit memory without a store read. A wider range is filed under
   * `blockKey` only and found through the store.
   */
  rememberRange(blockKey: string, known: KnownRange, ttlMs: number, blockBits: number): void {
    const width = BigInt((known.range.version === 4 ? 32 : 128) - blockBits);
    const first = known.range.start >> width;
    const last = known.range.end >> width;
    if (last - first >= BigInt(MAX_FAN_OUT)) {
      this.remember(blockKey, known, ttlMs);
      return;
    }
    for (let b = first; b <= last; b++) this.remember(rangeKey({ version: known.range.version, start: b << width, end: b << width }), known, ttlMs);
  }

  remember(blockKey: string, known: KnownRange, ttlMs: number): void {
    const now = this.now();
    const kept = (this.#blocks.get(blockKey) ?? []).filter(
      (e) => e.expiresAt > now && !(e.range.start === known.range.start && e.range.end === known.range.end),
    );
    kept.push({ ...known, expiresAt: now + ttlMs });
    this.#blocks.set(blockKey, kept.slice(-ENTRIES_PER_BLOCK));
  }
}

interface Row {
  start_address: string;
  end_address: string;
  registration: string | null;
  ttl_ms: number;
}

/**
 * The rdap_networks table (migration 0032). `covering` (the smallest CIDR holding the range, a
 * generated column with a GiST index) finds candidates; the exact ends decide; the narrowest wins.
 */
export function postgresRdapStore(db: Sql): RdapStore {
  return {
    async read(address) {
      const [row] = await db<Row>`
        select host(start_address) as start_address, host(end_address) as end_address, registration::text as registration,
               (extract(epoch from (expires_at - now())) * 1000)::float8 as ttl_ms
        from rdap_networks
        where covering >>= ${address.text}::inet and start_address <= ${address.text}::inet and end_address >= ${address.text}::inet
          and expires_at > now()
        order by masklen(covering) desc, start_address desc
        limit 1`;
      if (!row) return null;
      const start = addressValue(row.start_address);
      const end = addressValue(row.end_address);
      if (!start || !end) return null;
      return {
        range: { version: start.version, start: start.value, end: end.value },
        network: row.registration === null ? null : (JSON.parse(row.registration) as RdapNetwork),
        ttlMs: row.ttl_ms,
      };
    },
    async write(known, server, ttlMs) {
      const { version, start, end } = known.range;
      const registration = known.network === null ? null : JSON.stringify(known.network);
      await db`
        insert into rdap_networks (start_address, end_address, registration, server, expires_at)
        values (${formatAddress(version, start)}::inet, ${formatAddress(version, end)}::inet, ${registration}::text::jsonb, ${server},
                now() + make_interval(secs => ${ttlMs / 1000}))
        on conflict (start_address, end_address) do update
          set registration = excluded.registration, server = excluded.server, fetched_at = now(), expires_at = excluded.expires_at`;
    },
  };
}

/** Deletes expired rows; returns how many. For a periodic sweep: a lookup never reads them anyway. */
export async function purgeExpiredRdapNetworks(db: Sql): Promise<number> {
  const rows = await db<{ n: number }>`
    with gone as (delete from rdap_networks where expires_at <= now() returning 1) select count(*)::int as n from gone`;
  return rows[0]?.n ?? 0;
}
