import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = `${REPO_ROOT}node_modules/.bin/tsx`;

/** Environment for a child process: the parent's, minus the database/redis settings, plus `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.SIGHTLINE_SECRET;
  return { ...env, LOG_LEVEL: 'warn', ...extra };
}

export interface StartedServer {
  proc: ChildProcess;
  port: number;
  stdout: () => string;
  /** What it wrote to stderr so far: the JSON log lines. */
  stderr: () => string;
  stop(): Promise<number | null>;
}

/** The `npm run serve` entry: the `npm run build` output. */
export const BUILT_MAIN = 'packages/host/dist/main.mjs';

/**
 * The node options `npm run serve` runs BUILT_MAIN with, read from package.json, so a test or bench
 * that starts the built server starts it exactly as production does (`npm start` runs the same
 * command after its build; tests/layout checks the two agree).
 */
export const SERVE_NODE_OPTIONS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
  const argv = (pkg.scripts.serve ?? '').split(/\s+/);
  if (argv[0] !== 'node' || argv.at(-1) !== BUILT_MAIN) throw new Error(`package.json's serve script is not "node [options] ${BUILT_MAIN}"`);
  return argv.slice(1, -1);
})();

/**
 * Runs a server and waits until it prints `listening on http://localhost:<port>`: the `npm start`
 * entry (sources through tsx), or with `entry` a built bundle under plain node (BUILT_MAIN is
 * `npm run serve`).
 */
export async function startHost(
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
  { entry, nodeArgs = [] }: { entry?: string; nodeArgs?: string[] } = {},
): Promise<StartedServer> {
  const production = entry === BUILT_MAIN ? SERVE_NODE_OPTIONS : [];
  const [cmd, args] = entry ? [process.execPath, [...production, ...nodeArgs, entry]] : [TSX, [...nodeArgs, 'packages/host/src/main.ts']];
  const proc = spawn(cmd, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
    const check = () => {
      const m = /listening on http:\/\/localhost:(\d+)/.exec(out);
      if (m?.[1] && (!/demo partner/.test(out) || /curl -s/.test(out))) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout?.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}\n${out}\n${err}`));
    });
  });
  return {
    proc,
    port,
    stdout: () => out,
    stderr: () => err,
    stop: () =>
      new Promise((resolve) => {
        // Already gone: exited, or killed by a signal (a test's SIGKILL).
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
        proc.removeAllListeners('exit');
        proc.on('exit', (code) => resolve(code));
        proc.kill('SIGTERM');
      }),
  };
}

/** Runs a command to completion and returns its exit code and output. */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const proc = spawn(cmd, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out\n${stdout}\n${stderr}`));
    }, timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export const admin = (args: string[], env: NodeJS.ProcessEnv) => run(TSX, ['packages/host/src/admin.ts', ...args], env);
