/**
 * The operator's own IP databases (IP_DATABASES) on the Node host: core's reader of them
 * (ip/operator-databases/open-operator-databases.ts) over Node's file system and the `maxmind`
 * package's Reader.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  type OperatorDatabaseFiles,
  type OperatorDatabases,
  type OperatorDatabasesOptions,
  openOperatorDatabases as openWith,
  parseIpDatabasesSetting as parseWith,
} from '@sightline/core/ip/operator-databases/index';
import { Reader } from 'maxmind';

export type { OperatorDatabases } from '@sightline/core/ip/operator-databases/index';

export const nodeDatabaseFiles: OperatorDatabaseFiles = {
  async identity(file) {
    const s = await stat(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  },
  read: (file) => readFile(file),
  openReader: (bytes) => new Reader<Record<string, unknown>>(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
};

/** IP_DATABASES → its paths, each resolved against the working directory. */
export const parseIpDatabasesSetting = (raw: string | undefined): string[] => parseWith(raw, (p) => path.resolve(p));

/** Opens the files with Node's file system (see core's openOperatorDatabases). */
export const openOperatorDatabases = (opts: Omit<OperatorDatabasesOptions, 'files'>): Promise<OperatorDatabases> =>
  openWith({ ...opts, files: nodeDatabaseFiles });
