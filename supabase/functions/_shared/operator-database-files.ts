import { Buffer } from 'node:buffer';
import type { OperatorDatabaseFiles } from '@sightline/core/ip/operator-databases/index';
import { Reader } from 'maxmind';

/**
 * The operator's own databases (IP_DATABASES) read with Deno's file system: on Supabase, files
 * shipped beside the function as static files (config.toml), named relative to the working directory.
 */
export const denoDatabaseFiles: OperatorDatabaseFiles = {
  async identity(file) {
    const s = await Deno.stat(file);
    return `${s.ino ?? ''}:${s.size}:${s.mtime?.getTime() ?? ''}`;
  },
  read: (file) => Deno.readFile(file),
  openReader: (bytes) => new Reader<Record<string, unknown>>(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
};
