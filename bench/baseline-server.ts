import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

/**
 * The HTTP benches' baseline: the plainest honest server a user would write with the same
 * libraries, a Hono app with one JSON route on @hono/node-server, no middleware. It is bundled like
 * the production host and run under plain node in a process of its own, so both sides of every
 * ratio are the same kind of process driven by the same load generator.
 */
const app = new Hono();
app.get('/bare', (c) => c.json({ success: true }));
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? '127.0.0.1' }, (info: AddressInfo) => {
  process.stdout.write(`baseline listening on http://localhost:${info.port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
