import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '@sightline/core';
import { loadSchema, openPglite } from '@sightline/host';
import { createTestEnv, envForDatabase, TEST_SECRET, type TestEnv } from './app.ts';
import { usingPostgres } from './db.ts';
import { REPO_ROOT } from './process.ts';

/**
 * tests/deno/serve-function.ts under Deno, as a child process: the Supabase entry's dependencies
 * (buildDenoDeps) over a database the test chose, with the functions mounted at `/<name>` as behind
 * the Supabase gateway. The same launcher as tests/deno-smoke.test.ts's, shared so a second suite
 * need not copy it.
 */

/** The Deno the repository pins (devDependency `deno`), and the script it serves, relative to REPO_ROOT. */
export const DENO = `${REPO_ROOT}node_modules/.bin/deno`;
export const SERVE_SCRIPT = 'tests/deno/serve-function.ts';
const STARTUP_TIMEOUT_MS = 60_000;
const SHUTDOWN_TIMEOUT_MS = 10_000;

export interface DenoFunctionServer {
  /** `http://127.0.0.1:<port>`; each function answers at `<origin>/<name>`. */
  origin: string;
  /** SIGTERM, then the exit; rejects (after making sure the process is gone) unless it exits 0. */
  stop(): Promise<void>;
}

/** The database the Deno process opens: a Postgres URL, or a PGlite data directory nobody else holds. */
export type DenoDatabaseEnv = { DATABASE_URL: string } | { PGLITE_DIR: string };

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Starts the Deno server and resolves once it has printed its port. `extra` adds settings (IP_DATA_DIR, IP_DATA). */
export async function startDenoFunctions(db: DenoDatabaseEnv, extra: Record<string, string> = {}): Promise<DenoFunctionServer> {
  // Only the database the test chose may reach the child, never one inherited from the shell.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !['DATABASE_URL', 'SUPABASE_DB_URL', 'PGLITE_DIR', 'PORT', 'REDIS_URL', 'IP_DATA_DIR', 'IP_DATA'].includes(k),
    ),
  );
  const child = spawn(DENO, ['run', '--allow-all', '--config', 'deno.json', SERVE_SCRIPT], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...db, ...extra, PORT: '0', SIGHTLINE_SECRET: TEST_SECRET, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  const kill = async () => {
    if (exited(child)) return;
    child.kill('SIGKILL');
    await waitForExit(child, SHUTDOWN_TIMEOUT_MS);
  };

  const port = await new Promise<number>((resolve, reject) => {
    const fail = (why: string) => {
      cleanup();
      reject(new Error(`Deno server ${why}.\n--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`));
    };
    const onData = () => {
      const m = /^listening (\d+)$/m.exec(stdout);
      if (m?.[1]) {
        cleanup();
        resolve(Number(m[1]));
      }
    };
    // 'close', not 'exit': it waits for stdio to drain, so the error carries all of Deno's stderr.
    const onClose = (code: number | null, signal: string | null) => fail(`exited before listening (code ${code}, signal ${signal})`);
    const onError = (err: Error) => fail(`could not be spawned: ${err.message}`);
    const timer = setTimeout(() => fail(`did not report a port within ${STARTUP_TIMEOUT_MS / 1000} s`), STARTUP_TIMEOUT_MS);
    function cleanup() {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('close', onClose);
      child.off('error', onError);
    }
    child.stdout?.on('data', onData);
    child.once('close', onClose);
    child.once('error', onError);
  }).catch(async (err: unknown) => {
    await kill();
    throw err;
  });

  return {
    origin: `http://127.0.0.1:${port}`,
    async stop() {
      if (exited(child)) throw new Error(`Deno server died early (code ${child.exitCode}):\n${stderr}`);
      child.kill('SIGTERM');
      if (!(await waitForExit(child, SHUTDOWN_TIMEOUT_MS))) {
        await kill();
        throw new Error(`Deno server ignored SIGTERM for ${SHUTDOWN_TIMEOUT_MS / 1000} s and was killed:\n${stderr}`);
      }
      if (child.exitCode !== 0) throw new Error(`Deno server exited with ${child.exitCode ?? child.signalCode} on SIGTERM:\n${stderr}`);
    },
  };
}

/**
 * A test env over PGlite in a directory, for handing to Deno afterwards: the embedded default has
 * no URL a second process could use, and PGlite allows one process at a time, so the Node side must
 * close (env.close()) before Deno opens the directory.
 */
export async function openPgliteDirEnv(dir: string): Promise<TestEnv> {
  const db = await openPglite(dir);
  await migrate(db, await loadSchema());
  return envForDatabase({ db, url: undefined, drop: () => db.close() });
}

/**
 * A test env whose database Deno can open next: on Postgres the suite's own (Deno connects to
 * env.url); embedded, PGlite in a new directory under the system's tmp (`dataDir`, named for
 * `suite`), which the suite removes once done and which Deno may open only after env.close().
 */
export async function envForDeno(suite: string): Promise<{ env: TestEnv; dataDir: string | undefined }> {
  if (usingPostgres) return { env: await createTestEnv(), dataDir: undefined };
  const dataDir = await mkdtemp(join(tmpdir(), `sightline-${suite}-`));
  return { env: await openPgliteDirEnv(dataDir), dataDir };
}
