import type { Logger } from '../kernel/context.ts';
import { parseCidr } from '../kernel/net/ip.ts';
import type { Database, Sql } from '../kernel/sql.ts';
import { type AsnBase, type CompanyRow, LocalIpData, type OverlayRow, type OwnerJudge, type RangeKind } from './local-data.ts';

/** The imported and learned layers, from Postgres. */
export async function readLayers(db: Sql) {
  const overlays4: OverlayRow<number>[] = [];
  const overlays6: OverlayRow<bigint>[] = [];
  for (const r of await db<{ network: string; kind: RangeKind; provider: string | null }>`
      select network::text as network, kind, provider from ip_ranges`) {
    const c = parseCidr(r.network);
    if (c?.version === 4) overlays4.push({ start: c.start, end: c.end, kind: r.kind, provider: r.provider });
    else if (c?.version === 6) overlays6.push({ start: c.start, end: c.end, kind: r.kind, provider: r.provider });
  }
  const companies4: CompanyRow<number>[] = [];
  const companies6: CompanyRow<bigint>[] = [];
  for (const r of await db<{ network: string; domain: string; company_name: string; confidence: number; source: 'import' | 'learned' }>`
      select network::text as network, domain, company_name, confidence::float8 as confidence, source from ip_companies`) {
    const c = parseCidr(r.network);
    const row = { domain: r.domain, company_name: r.company_name, confidence: r.confidence, source: r.source };
    if (c?.version === 4) companies4.push({ start: c.start, end: c.end, ...row });
    else if (c?.version === 6) companies6.push({ start: c.start, end: c.end, ...row });
  }
  return { overlays4, overlays6, companies4, companies6 };
}

export interface IpStore {
  data(): LocalIpData;
  /**
   * Re-reads the imported and learned layers from Postgres. Resolves once a read that began after
   * the call is in place, so a caller sees its own committed change.
   */
  reload(): Promise<void>;
  /** Stops following the database's change notifications. */
  close(): Promise<void>;
}

export interface IpStoreOptions {
  /** LISTEN for changes and reload (default); off where a process cannot hold a connection for it. */
  follow?: boolean;
  /** Who votes on network owners as the data makes its answers (the ownership source); none by default. */
  judge?: OwnerJudge | null;
}

/** What the triggers of migrations/functions/ip/sl_notify_ip_data_changed.sql notify when ip_ranges or ip_companies change. */
export const IP_DATA_CHANGED_CHANNEL = 'sl_ip_data_changed';

/**
 * The local data, kept current: whoever changes the imported or learned layers (an operator import
 * run from another machine, a record another replica learned) commits, the database announces it,
 * and every process reloads. It listens before the first read, so nothing committed after that
 * read can be missed, and reloads whenever its listening connection comes back (notifications sent
 * while it was away are lost).
 */
/** Attempts at the first read of the layers before the load gives up: about a minute in all. */
const FIRST_READ_ATTEMPTS = 15;

/**
 * The first read of what the data needs from Postgres, retried while the database is away for a
 * moment (a restart or failover while a server loads its data in the background, seconds after it
 * started): the files are read by then, so waiting is cheap, and stopping the server for it was
 * not (found by tests/database-outage). A failure that lasts past the attempts still fails the load.
 */
async function firstRead<T>(log: Logger, what: string, read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (attempt >= FIRST_READ_ATTEMPTS) throw err;
      log.warn(`local IP data: ${what} failed; retrying`, { attempt, error: err instanceof Error ? err.message : String(err) });
      await new Promise((resume) => setTimeout(resume, Math.min(250 * 2 ** attempt, 5_000)));
    }
  }
}

export async function createIpStore(
  db: Database,
  log: Logger,
  base: AsnBase,
  { follow = true, judge = null }: IpStoreOptions = {},
): Promise<IpStore> {
  const started = performance.now();
  let current: LocalIpData | undefined;
  let missed = false;
  let inFlight: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const load = async () => {
    const layers = await readLayers(db);
    current = (current as LocalIpData).withLayers(layers);
  };
  const reload = (): Promise<void> => {
    if (!inFlight) {
      inFlight = load().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    }
    // The read in progress may predate the caller's change: one more after it serves every caller
    // that arrives meanwhile.
    queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return reload();
      });
    return queued;
  };
  const onChange = () => {
    if (!current) {
      missed = true;
      return;
    }
    reload().catch((err: unknown) => log.warn('local IP data reload failed', { error: err instanceof Error ? err.message : String(err) }));
  };
  let listening = false;
  const listener = follow
    ? await firstRead(log, 'LISTEN for changes', () =>
        db.listen(IP_DATA_CHANGED_CHANNEL, onChange, () => {
          // The first call is the initial LISTEN, before the first read; later ones are reconnects.
          if (listening) onChange();
          listening = true;
        }),
      )
    : undefined;
  current = LocalIpData.fromBase(base, await firstRead(log, 'reading the imported and learned ranges', () => readLayers(db)), judge);
  if (missed) await reload();
  log.info('local IP data loaded', { ms: Math.round(performance.now() - started), ...current.stats });
  return {
    data: () => current as LocalIpData,
    reload,
    close: async () => {
      await listener?.unlisten();
    },
  };
}
