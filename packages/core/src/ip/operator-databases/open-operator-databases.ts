/**
 * The operator's own IP databases, named in IP_DATABASES (comma-separated paths): MaxMind GeoIP2
 * Enterprise, ISP, Domain, Connection-Type and Anonymous-IP, GeoLite2 ASN, and IPinfo Lite, each
 * recognised by the `databaseType` in its metadata and read with the `maxmind` package's reader.
 * Core reads no file and imports no reader: each host hands in its file system and the reader
 * (OperatorDatabaseFiles: Node's fs in packages/host, Deno's on Supabase), so both run this code.
 *
 * Start-up is strict, reloads are forgiving. A file that is missing, unreadable, not a MaxMind DB or
 * of a type Sightline does not read stops start-up with a message naming it: an operator who named a
 * file expects it to be used, and a silent lookup without it would be wrong for as long as nobody
 * notices. Once running, each file's identity (inode, size, mtime, as the host sees them) is checked every
 * `reloadIntervalMs`; a changed file is read whole and parsed beside the one in use, and swapped in
 * only when it is good. A bad or vanished replacement (a copy still being written, a failed
 * download) keeps the old data and logs one warning, so replacing a database is never an outage.
 * Polling the file, not fs.watch, because the usual way to replace a database (write a temporary
 * file, rename it over the old one) swaps the inode, which a watch on the old file never reports.
 */
import type { Logger } from '../../kernel/context.ts';
import { AppError } from '../../kernel/errors.ts';
import type { OperatorDatabaseOptions } from './answer-from-databases.ts';
import { detectDatabaseKind, KNOWN_DATABASE_PRODUCTS, type OperatorDatabaseKindInfo } from './detect-database-kind.ts';
import { lookUpOperatorDatabases, type OperatorDatabase, type OperatorDatabaseLookup } from './look-up-operator-databases.ts';

/** How often files are checked for a replacement when the composition does not say. */
export const DEFAULT_RELOAD_INTERVAL_MS = 60_000;

/** A MaxMind DB reader over a file's bytes, as the `maxmind` package's Reader is. */
export interface MaxMindReader {
  readonly metadata: { databaseType: string; buildEpoch: Date; searchTreeSize: number };
  get(ip: string): unknown;
}

/** What a host gives for reading the files: its file system and the reader. */
export interface OperatorDatabaseFiles {
  /** Changes whenever the file is replaced (inode, size, mtime); throws when the file is missing. */
  identity(path: string): Promise<string>;
  read(path: string): Promise<Uint8Array>;
  /** Throws on bytes that are not a MaxMind DB. */
  openReader(bytes: Uint8Array): MaxMindReader;
}

export interface OperatorDatabasesOptions extends OperatorDatabaseOptions {
  /** IP_DATABASES, split (parseIpDatabasesSetting): the files in the order the operator named them. */
  paths: readonly string[];
  files: OperatorDatabaseFiles;
  log: Logger;
  /** How often each file is checked for a replacement; 0 turns reloading off. */
  reloadIntervalMs?: number;
}

export interface OpenedDatabaseFile {
  path: string;
  product: string;
  databaseType: string;
  buildEpoch: Date;
}

export interface OperatorDatabases {
  /**
   * Every database's answer for one address (see lookUpOperatorDatabases); `ownerTraffic` is the
   * caller's verdict on the address's network owner (resolveFree passes ownership's), over the one given at open.
   */
  lookUp(ip: string, classifiers?: Pick<OperatorDatabaseOptions, 'ownerTraffic'>): OperatorDatabaseLookup;
  /** The files in use, in IP_DATABASES order. */
  files(): OpenedDatabaseFile[];
  /** Checks every file now and swaps in those that changed and read well (what the timer runs). */
  refresh(): Promise<void>;
  /** Stops the reload timer. */
  close(): void;
}

/**
 * IP_DATABASES → its paths: comma-separated, blanks ignored, each resolved by the host (`resolve`:
 * against the working directory), each named once.
 */
export function parseIpDatabasesSetting(raw: string | undefined, resolve: (path: string) => string = (p) => p): string[] {
  const paths = (raw ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map(resolve);
  return [...new Set(paths)];
}

interface Loaded extends OperatorDatabase {
  readonly identity: string;
  readonly databaseType: string;
  readonly buildEpoch: Date;
}

/** A file that cannot serve, with the reason in words. */
class UnusableDatabase extends Error {}

/**
 * Opens every file in `opts.paths`; throws AppError `ip_data_unavailable` naming the first file that
 * cannot serve. With no paths it answers nothing and starts no timer.
 */
export async function openOperatorDatabases(opts: OperatorDatabasesOptions): Promise<OperatorDatabases> {
  const { log } = opts;
  let current: readonly Loaded[] = await Promise.all(
    opts.paths.map((file) =>
      loadDatabase(file, opts.files, log).catch((err: unknown) => {
        throw new AppError(
          'ip_data_unavailable',
          `IP_DATABASES: ${file} ${err instanceof UnusableDatabase ? err.message : `cannot be read (${messageOf(err)})`}`,
        );
      }),
    ),
  );
  // The identity of a replacement that failed, per file, so a bad file is reported once, not every poll.
  const failed = new Map<string, string>();
  let refreshing: Promise<void> | null = null;

  const refreshOnce = async (): Promise<void> => {
    const next = [...current];
    let changed = false;
    for (const [i, db] of current.entries()) {
      let identity: string;
      try {
        identity = await opts.files.identity(db.path);
      } catch (err) {
        if (failed.get(db.path) !== 'missing')
          log.warn('ip database file is gone; still using the copy read before', { path: db.path, error: messageOf(err) });
        failed.set(db.path, 'missing');
        continue;
      }
      if (identity === db.identity) {
        failed.delete(db.path);
        continue;
      }
      if (identity === failed.get(db.path)) continue;
      try {
        next[i] = await loadDatabase(db.path, opts.files, log);
        changed = true;
        failed.delete(db.path);
        log.info('ip database reloaded', { path: db.path, database_type: next[i]?.databaseType, build: next[i]?.buildEpoch.toISOString() });
      } catch (err) {
        failed.set(db.path, identity);
        log.warn('ip database replacement is unusable; still using the copy read before', { path: db.path, error: messageOf(err) });
      }
    }
    // One assignment: a lookup sees the old set or the new one, never half of each.
    if (changed) current = next;
  };

  const refresh = (): Promise<void> => {
    refreshing ??= refreshOnce().finally(() => {
      refreshing = null;
    });
    return refreshing;
  };

  const interval = opts.reloadIntervalMs ?? DEFAULT_RELOAD_INTERVAL_MS;
  const timer = current.length > 0 && interval > 0 ? setInterval(() => void refresh(), interval) : null;
  // Node's timer would keep a process alive that has nothing else to do; Deno's is a number.
  if (timer && typeof timer === 'object' && 'unref' in timer) timer.unref();

  const classifiers: OperatorDatabaseOptions = { ownerTraffic: opts.ownerTraffic, domainTraffic: opts.domainTraffic };
  return {
    lookUp: (ip, perLookup) =>
      lookUpOperatorDatabases(ip, current, perLookup?.ownerTraffic ? { ...classifiers, ownerTraffic: perLookup.ownerTraffic } : classifiers),
    files: () => current.map((db) => ({ path: db.path, product: db.kind.product, databaseType: db.databaseType, buildEpoch: db.buildEpoch })),
    refresh,
    close: () => {
      if (timer) clearInterval(timer);
    },
  };
}

// Addresses every tree has a path for: walking them reaches the deep nodes a truncated file lacks.
const PROBES = ['1.1.1.1', '8.8.8.8', '128.101.101.101', '223.255.255.255', '2001:db8::1', '2a00:1450::1', 'ffff::1'];

async function loadDatabase(file: string, files: OperatorDatabaseFiles, log: Logger): Promise<Loaded> {
  const identity = await files.identity(file);
  const bytes = await files.read(file);
  let reader: MaxMindReader;
  try {
    reader = files.openReader(bytes);
  } catch (err) {
    throw new UnusableDatabase(`is not a MaxMind DB (.mmdb) file or is damaged (${messageOf(err)})`);
  }
  const { databaseType, buildEpoch, searchTreeSize } = reader.metadata;
  const kind: OperatorDatabaseKindInfo | null = detectDatabaseKind(String(databaseType));
  if (!kind) {
    throw new UnusableDatabase(
      `is a "${String(databaseType)}" database, which Sightline does not read (it reads ${KNOWN_DATABASE_PRODUCTS.join(', ')})`,
    );
  }
  // The search tree must fit in the file, and walking it must not run off the end.
  if (!(searchTreeSize + 16 <= bytes.length)) throw new UnusableDatabase(`is damaged (its search tree is larger than the file)`);
  try {
    for (const ip of PROBES) reader.get(ip);
  } catch (err) {
    throw new UnusableDatabase(`is damaged (${messageOf(err)})`);
  }
  let warned = false;
  return {
    path: file,
    kind,
    identity,
    databaseType: String(databaseType),
    buildEpoch,
    get(ip) {
      try {
        return reader.get(ip);
      } catch (err) {
        // A record the probes did not reach can still be damaged: that address gets no answer from this file.
        if (!warned) log.warn('ip database record unreadable', { path: file, error: messageOf(err) });
        warned = true;
        return null;
      }
    },
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
