import path from 'node:path';
import { AppError, parseEnv } from '@sightline/core';
import { buildHostDeps } from './deps.ts';
import { createLogger } from './logger.ts';
import { operatorUsage, runOperatorCommand } from './operator-commands.ts';
import { readLiveRuntimeFile } from './runtime-file.ts';

/**
 * `npm run admin -- <command> --flag value …`: prints one JSON object on stdout.
 * With DATABASE_URL it talks to Postgres; on the embedded default it goes through the running
 * server when there is one (it owns the PGlite files), or opens the data directory itself.
 */
function parseFlags(argv: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) throw new AppError('invalid_request', `unexpected argument ${arg}`);
    const eq = arg.indexOf('=');
    if (eq > 0) {
      flags[arg.slice(2, eq)] = arg.slice(eq + 1);
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) throw new AppError('invalid_request', `${arg} needs a value`);
    flags[arg.slice(2)] = next;
    i++;
  }
  return flags;
}

/** A progress bar on stderr (stdout carries only the JSON result). */
function progressBar(done: number, total: number) {
  if (!process.stderr.isTTY && done < total) return;
  const width = 30;
  const filled = total ? Math.round((done / total) * width) : width;
  process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}${done >= total ? '\n' : ''}`);
}

async function viaServer(port: number, token: string, command: string, flags: Record<string, string>) {
  const res = await fetch(`http://127.0.0.1:${port}/_operator/${encodeURIComponent(command)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(flags),
  });
  const body = (await res.json()) as { success?: boolean; error?: string };
  if (!res.ok) throw new AppError('invalid_request', body.error ?? `server answered ${res.status}`);
  return body;
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  if (!command || command === '--help' || command === 'help') {
    process.stdout.write(`usage:\n${operatorUsage}\n`);
    return;
  }
  const flags = parseFlags(rest);
  // Files are read by whichever process runs the command; make the path independent of its cwd.
  if (flags.file) flags.file = path.resolve(flags.file);
  // A one-shot command needs neither the local IP databases in memory (the server reloads after
  // imports) nor an auth cache with its listening connection.
  const env = parseEnv({
    ...process.env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    IP_DATA: process.env.IP_DATA ?? '0',
    AUTH_CACHE_TTL_SECONDS: process.env.AUTH_CACHE_TTL_SECONDS ?? '0',
  });
  if (!env.DATABASE_URL) {
    const live = await readLiveRuntimeFile(env.DATA_DIR);
    if (live) {
      process.stdout.write(`${JSON.stringify(await viaServer(live.port, live.token, command, flags))}\n`);
      return;
    }
  }
  const deps = await buildHostDeps(env, createLogger(env.LOG_LEVEL));
  try {
    const out = await runOperatorCommand(deps, command, flags, progressBar);
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await deps.close();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`${JSON.stringify({ success: false, error: message })}\n`);
  process.exit(1);
});
