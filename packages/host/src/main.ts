import type { AddressInfo } from 'node:net';
import { AppError, createPartner, grantCredits, isEmptyDatabase, parseEnv } from '@sightline/core';
import { buildHostDeps } from './deps.ts';
import { createNodeServer } from './node-server.ts';
import { runOperatorCommand } from './operator-commands.ts';
import { removeRuntimeFile, tokensEqual, writeRuntimeFile } from './runtime-file.ts';
import { scheduledJobs, startScheduler } from './scheduler.ts';
import { allowedMethodsAt, createHostApp, FUNCTIONS_PREFIX } from './server.ts';

/** What the demo partner `npm start` creates may spend on lookups: 200 business matches of ip-to-company. */
const DEMO_LOOKUP_CREDITS = 1000;

/** `npm start`: one process serving every function, on PGlite unless DATABASE_URL is set. */
async function main() {
  const env = parseEnv(process.env);
  const deps = await buildHostDeps(env, undefined, { loadIpInBackground: true });

  const app = createHostApp(deps);
  const embedded = !env.DATABASE_URL;
  let operatorToken = '';
  if (embedded) {
    // The CLI's way in while this process owns the PGlite files; loopback callers with the token only.
    app.post('/_operator/:command', async (c) => {
      const remote = c.env && (c.env as { incoming?: { socket?: { remoteAddress?: string } } }).incoming?.socket?.remoteAddress;
      const auth = c.req.header('authorization') ?? '';
      const loopback = remote === '127.0.0.1' || remote === '::1' || remote === '::ffff:127.0.0.1';
      if (!loopback || !operatorToken || !tokensEqual(auth, `Bearer ${operatorToken}`)) {
        throw new AppError('forbidden', 'operator commands are accepted only from this machine with the data-directory token');
      }
      const flags = (await c.req.json().catch(() => ({}))) as Record<string, string>;
      try {
        return c.json(await runOperatorCommand(deps, c.req.param('command'), flags));
      } finally {
        // Commands create, suspend and reactivate keys: nothing cached may outlive the answer.
        deps.authCache?.invalidateAll();
      }
    });
  }

  let demo: { key: string; account_id: string } | undefined;
  const wantDemo = env.DEMO_PARTNER ?? embedded;
  if (wantDemo && (await isEmptyDatabase({ ctx: deps, input: {} }))) {
    demo = await createPartner({ ctx: deps, input: { name: 'Demo Partner', quota: 1000, topup: 100 } });
    // Lookup credits too, so the README's first ip-to-company answers rather than 402.
    await grantCredits({ ctx: deps, input: { accountId: demo.account_id, credits: DEMO_LOOKUP_CREDITS } });
  }

  const server = createNodeServer({ fetch: app.fetch, log: deps.log, allowedMethods: allowedMethodsAt });
  server.listen(env.PORT, env.HOST, async () => {
    const info = server.address() as AddressInfo;
    if (embedded) operatorToken = (await writeRuntimeFile(env.DATA_DIR, info.port)).token;
    const base = `http://localhost:${info.port}${FUNCTIONS_PREFIX}`;
    const lines = [
      `Sightline listening on http://localhost:${info.port} (${embedded ? `embedded PGlite in ${env.DATA_DIR}` : 'Postgres'})`,
      `  functions: ${base}/<name>    OpenAPI: http://localhost:${info.port}/openapi.json`,
    ];
    if (demo) {
      lines.push(
        '',
        'Created a demo partner on this empty database. Its master key is shown once:',
        `  ${demo.key}`,
        '',
        'Try it:',
        `  curl -s ${base}/partner-pool-state -H "x-access-key: ${demo.key}"`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  });

  const scheduler = startScheduler(scheduledJobs(deps, { rolloverIntervalSeconds: env.ROLLOVER_INTERVAL_SECONDS }), deps.log);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.log.info('shutting down', { signal });
    server.close();
    await scheduler.stop();
    if (embedded) await removeRuntimeFile(env.DATA_DIR);
    await deps.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`sightline: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
