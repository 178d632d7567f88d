import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * While an embedded server runs it owns the PGlite files, so the admin CLI must go through it.
 * The server writes `server.json` (port, pid, a fresh operator token; mode 0600) into the data
 * directory; the CLI reads it and calls the loopback-only operator endpoint with the token.
 */
export interface RuntimeFile {
  pid: number;
  port: number;
  token: string;
}

export const runtimeFilePath = (dataDir: string) => path.join(dataDir, 'server.json');

export async function writeRuntimeFile(dataDir: string, port: number): Promise<RuntimeFile> {
  const info: RuntimeFile = { pid: process.pid, port, token: randomBytes(32).toString('base64url') };
  await writeFile(runtimeFilePath(dataDir), JSON.stringify(info), { mode: 0o600 });
  return info;
}

export async function removeRuntimeFile(dataDir: string): Promise<void> {
  await rm(runtimeFilePath(dataDir), { force: true });
}

/** The running server's runtime file, or null when none is running (a stale file is ignored). */
export async function readLiveRuntimeFile(dataDir: string): Promise<RuntimeFile | null> {
  let info: RuntimeFile;
  try {
    info = JSON.parse(await readFile(runtimeFilePath(dataDir), 'utf8')) as RuntimeFile;
  } catch {
    return null;
  }
  try {
    process.kill(info.pid, 0);
  } catch {
    return null;
  }
  return info;
}

export function tokensEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
