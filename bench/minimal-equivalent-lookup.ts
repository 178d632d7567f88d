import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { z } from 'zod';

/**
 * What ip-to-company's cached answer is measured against (issue 30): the least a user would write
 * with the same libraries to answer the same request. One POST route: the key from `x-access-key`
 * found in a Map, the body parsed with Hono's `c.req.json()` and validated with zod, the answer
 * taken from a Map of results. No credits, limits, metering or request ids. The bench fills both
 * Maps from what our server answered (EQUIV_KEYS: key → account id; EQUIV_RESULTS: address → the
 * cached answer), so both sides send the same body. Bundled and run like the production host, in a
 * process of its own.
 */
const keys = new Map<string, string>(Object.entries(JSON.parse(process.env.EQUIV_KEYS ?? '{}') as Record<string, string>));
const results = new Map<string, unknown>(Object.entries(JSON.parse(process.env.EQUIV_RESULTS ?? '{}') as Record<string, unknown>));

const LookupRequest = z.object({ ip: z.union([z.ipv4(), z.ipv6()]) }).strict();

const app = new Hono();
app.post('/ip-to-company', async (c) => {
  const accountId = keys.get(c.req.header('x-access-key') ?? '');
  if (!accountId) return c.json({ success: false, error: 'missing or unknown x-access-key' }, 401);
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    return c.json({ success: false, error: 'the request body is not valid JSON' }, 400);
  }
  const parsed = LookupRequest.safeParse(body);
  if (!parsed.success) return c.json({ success: false, error: parsed.error.issues[0]?.message ?? 'invalid request' }, 400);
  const result = results.get(parsed.data.ip);
  if (!result) return c.json({ success: false, error: 'no result for this address' }, 404);
  return c.json(result);
});
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? '127.0.0.1' }, (info: AddressInfo) => {
  process.stdout.write(`minimal equivalent listening on http://localhost:${info.port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
