import { createKeyring, silentLogger, type CoreDeps, type Database } from '@sightline/core';
import { createHostApp, createNodeWebhookTransport } from '@sightline/host';
import { openTestDatabase, type TestDatabase } from './db.ts';

export const TEST_SECRET = 'test-server-secret-0123456789abcdef-not-for-production';

export interface TestEnv extends TestDatabase {
  deps: CoreDeps & { db: Database };
  app: ReturnType<typeof createHostApp>;
  close(): Promise<void>;
}

/** A database, dependencies and the full Node host app, as `npm start` builds them. */
export async function createTestEnv(opts: { allowPrivateWebhooks?: boolean; pool?: number } = {}): Promise<TestEnv> {
  const tdb = await openTestDatabase({ pool: opts.pool });
  const allowPrivate = opts.allowPrivateWebhooks ?? true;
  const webhooks = createNodeWebhookTransport({ allowPrivate });
  const deps = {
    db: tdb.db,
    keyring: await createKeyring(TEST_SECRET),
    webhooks,
    allowPrivateWebhooks: allowPrivate,
    log: silentLogger,
  };
  return {
    ...tdb,
    deps,
    app: createHostApp(deps),
    async close() {
      await webhooks.close();
      await tdb.drop();
    },
  };
}

export const fn = (name: string) => `http://localhost/functions/v1/${name}`;

export type Json = Record<string, unknown>;

/** In-process request helper: JSON in, `{ status, body, headers }` out. */
export async function call(
  env: TestEnv,
  name: string,
  opts: { key?: string; method?: string; body?: unknown; rawBody?: string; query?: Record<string, string>; headers?: Record<string, string> } = {},
) {
  const url = new URL(fn(name));
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-access-key'] = opts.key;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await env.app.request(url.href, { method: opts.method ?? (body ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
