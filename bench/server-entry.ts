import type { AddressInfo } from 'node:net';
import { parseEnv } from '@sightline/core';
import { allowedMethodsAt, buildHostDeps, createHostApp, createNodeServer } from '@sightline/host';

/**
 * The server the HTTP benches measure, built with `npm run build`'s bundler and run under plain
 * node in its own process: the production host (`npm run serve`) with one extra route, the bare
 * baseline, on the same app, behind the same global middleware. Configuration comes from the
 * environment like the real server's; it announces its port the way `npm start` does.
 */
const env = parseEnv(process.env);
const deps = await buildHostDeps(env);
const app = createHostApp(deps);
app.get('/bench/bare', (c) => c.json({ success: true }));
const server = createNodeServer({ fetch: app.fetch, log: deps.log, allowedMethods: allowedMethodsAt });
server.listen(env.PORT, env.HOST, () => {
  process.stdout.write(`bench server listening on http://localhost:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  void deps.close().finally(() => process.exit(0));
});
