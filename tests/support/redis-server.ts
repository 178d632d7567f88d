import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';

/** Whether a `redis-server` binary is on PATH (it is on CI and on the development machines). */
export const redisServerAvailable = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** A port nothing listens on right now, from the kernel. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP port assigned');
  return address.port;
}

/**
 * A private redis-server on 127.0.0.1, for tests that stop and restart it: never the shared
 * REDIS_URL one, which other suites use at the same time. Nothing is persisted, so a restart on
 * the same port comes back empty, as a crashed cache would.
 */
export interface TestRedisServer {
  url: string;
  start(): Promise<void>;
  /** SIGKILL, as a crash or a lost node: no goodbye to the clients. */
  kill(): Promise<void>;
  /** SIGSTOP/SIGCONT: the process keeps its connections open but answers nothing meanwhile. */
  pause(): void;
  resume(): void;
}

export function testRedisServer(port: number): TestRedisServer {
  let proc: ChildProcess | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      proc = child;
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`redis-server did not start in 10 s:\n${out}`)), 10_000);
        child.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Ready to accept connections')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`redis-server exited with ${code}:\n${out}`));
        });
      });
    },
    async kill() {
      const child = proc;
      proc = undefined;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
    pause() {
      proc?.kill('SIGSTOP');
    },
    resume() {
      proc?.kill('SIGCONT');
    },
  };
}
