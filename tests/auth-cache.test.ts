import {
  AUTH_CHANGED_CHANNEL,
  AUTH_PROBE_PREFIX,
  authenticateKey,
  type CoreDeps,
  createAuthCache,
  createKeyring,
  generateApiKey,
  type KeyRecord,
  listenAuthCache,
  type Sql,
  silentLogger,
} from '@sightline/core';
import { nodeHmacSha256Hex, nodeSha256Base64 } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, TEST_SECRET, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { createChildVia, seedPartner } from './support/seed.ts';

const caller = (id: string): KeyRecord => ({
  apiKeyId: id,
  accountId: 'a',
  status: 'active',
  isPartner: false,
  isPartnerMaster: false,
  parentApiKeyId: null,
});

describe('the auth cache itself', () => {
  it('serves an entry until its TTL, then forgets it', () => {
    let now = 1_000;
    const cache = createAuthCache({ ttlMs: 50, maxEntries: 10, digest: nodeSha256Base64, now: () => now });
    cache.store('h', caller('k'), cache.begin());
    now += 49;
    expect(cache.get('h')?.apiKeyId).toBe('k');
    now += 1;
    expect(cache.get('h')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used entry past its bound', () => {
    const cache = createAuthCache({ ttlMs: 60_000, maxEntries: 2, digest: nodeSha256Base64 });
    cache.store('a', caller('a'), cache.begin());
    cache.store('b', caller('b'), cache.begin());
    cache.get('a'); // now b is the oldest
    cache.store('c', caller('c'), cache.begin());
    expect([cache.get('a')?.apiKeyId, cache.get('b'), cache.get('c')?.apiKeyId]).toEqual(['a', undefined, 'c']);
  });

  it('is indexed by the digest of a key, never by the key itself', () => {
    const seen: string[] = [];
    // A deliberately weak digest, so two keys share an index: proof that the index is the digest.
    const digest = (k: string) => {
      seen.push(k);
      return `len:${k.length}`;
    };
    const cache = createAuthCache({ ttlMs: 60_000, maxEntries: 10, digest });
    cache.store('sl_aaaa', caller('k'), cache.begin());
    expect(cache.get('sl_bbbb')?.apiKeyId).toBe('k');
    expect(seen).toEqual(['sl_aaaa', 'sl_bbbb']);
  });

  it('drops a row read before an invalidation, so a lookup racing a rotation cannot re-cache the old key', () => {
    const cache = createAuthCache({ ttlMs: 60_000, maxEntries: 10, digest: nodeSha256Base64 });
    const generation = cache.begin();
    cache.invalidateAll(); // the rotation commits while the lookup's query is in flight
    cache.store('h', caller('old'), generation);
    expect(cache.get('h')).toBeUndefined();
  });

  it('authenticateKey: a query in flight across an invalidation answers, but does not store', async () => {
    const key = generateApiKey();
    let release: (() => void) | undefined;
    let queries = 0;
    // A database whose key lookup waits until the test lets it answer.
    const db = (async () => {
      queries++;
      await new Promise<void>((r) => (release = r));
      return [{ id: 'k1', account_id: 'a1', status: 'active', is_partner_master: false, parent_api_key_id: null, is_partner: false }];
    }) as unknown as Sql;
    const authCache = createAuthCache({ ttlMs: 60_000, maxEntries: 10, digest: nodeSha256Base64 });
    const ctx = {
      db,
      keyring: await createKeyring(TEST_SECRET, { hmacSha256Hex: nodeHmacSha256Hex }),
      log: silentLogger,
      authCache,
    } as unknown as CoreDeps;
    const pending = authenticateKey({ ctx, input: { key } });
    await new Promise((r) => setImmediate(r));
    authCache.invalidateAll();
    release?.();
    expect((await pending).apiKeyId).toBe('k1');
    expect(authCache.size).toBe(0);
    // Without an invalidation in between, the next lookup is stored and the one after is a hit.
    const second = authenticateKey({ ctx, input: { key } });
    await new Promise((r) => setImmediate(r));
    release?.();
    await second;
    expect(authCache.size).toBe(1);
    await authenticateKey({ ctx, input: { key } });
    expect(queries).toBe(2);
  });
});

describe('the listener behind the cache', () => {
  /** A database whose notifications can be switched off, as behind a transaction pooler. */
  function fakeDb() {
    const listeners: ((payload: string) => void)[] = [];
    const state = { deaf: false };
    const db = Object.assign(
      async (_strings: TemplateStringsArray, ...values: unknown[]) => {
        // Only pg_notify(channel, marker) is ever sent here.
        if (!state.deaf) {
          setTimeout(() => {
            for (const l of listeners) l(values[1] as string);
          }, 1);
        }
        return [];
      },
      {
        begin: () => expect.unreachable('no transactions'),
        listen: async (_channel: string, onNotify: (payload: string) => void, onListen?: () => void) => {
          listeners.push(onNotify);
          onListen?.();
          return { unlisten: async () => {} };
        },
      },
    );
    return { db: db as unknown as Parameters<typeof listenAuthCache>[0], state };
  }
  const opts = { ttlMs: 60_000, maxEntries: 10, digest: nodeSha256Base64, heartbeatMs: 20, probeTimeoutMs: 40 };

  it('stays off when notifications never arrive (LISTEN behind a transaction pooler)', async () => {
    const { db, state } = fakeDb();
    state.deaf = true;
    const { cache, unlisten } = await listenAuthCache(db, opts);
    cache.store('k', caller('k'), cache.begin());
    expect([cache.enabled, cache.get('k'), cache.size]).toEqual([false, undefined, 0]);
    await unlisten();
  });

  it('switches off and empties when the echo stops, and back on when it returns; its own probes clear nothing', async () => {
    const { db, state } = fakeDb();
    const { cache, unlisten } = await listenAuthCache(db, opts);
    expect(cache.enabled).toBe(true);
    cache.store('k', caller('k'), cache.begin());
    await new Promise((r) => setTimeout(r, 100)); // several heartbeats
    expect(cache.get('k')?.apiKeyId).toBe('k');
    state.deaf = true;
    const deadline = Date.now() + 2000;
    while (cache.enabled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect([cache.enabled, cache.size]).toEqual([false, 0]);
    state.deaf = false;
    while (!cache.enabled && Date.now() < deadline + 2000) await new Promise((r) => setTimeout(r, 10));
    expect(cache.enabled).toBe(true);
    await unlisten();
  });
});

describe(`the auth cache in the app (${usingPostgres ? 'Postgres' : 'embedded PGlite'})`, () => {
  let env: TestEnv;
  let partner: Awaited<ReturnType<typeof seedPartner>>;
  beforeAll(async () => {
    env = await createTestEnv();
    partner = await seedPartner(env.deps, { quota: 1000 });
  });
  afterAll(() => env.close());

  // ip-to-company authenticates any key, then answers 503 here (no IP data in this env): 503 means
  // the key was accepted, 401 that it was not.
  const lookupWith = async (key: string) => (await call(env, 'ip-to-company', { key, body: { ip: '8.8.8.8' } })).status;
  const cache = () => env.deps.authCache ?? expect.unreachable('the test env builds an auth cache');

  it('serves a repeated key from memory', async () => {
    const { child } = await createChildVia(env, partner.key);
    expect(await lookupWith(child.key)).toBe(503);
    const cached = cache().size;
    expect(cached).toBeGreaterThan(0);
    // Served without the database: the trigger is off, so this revocation is not announced.
    await env.db`alter table api_keys disable trigger api_keys_auth_changed`;
    try {
      await env.db`update api_keys set status = 'revoked' where id = ${child.api_key_id}`;
      await env.authSync();
      expect(await lookupWith(child.key)).toBe(503);
    } finally {
      await env.db`alter table api_keys enable trigger api_keys_auth_changed`;
    }
    // Any partner action in this process clears it before answering.
    expect((await call(env, 'partner-set-webhook', { key: partner.key, body: { webhook_url: null } })).status).toBeLessThan(500);
    expect(await lookupWith(child.key)).toBe(401);
  });

  it('a rotation through the API refuses the old key on the very next request, with no wait', async () => {
    const { child } = await createChildVia(env, partner.key);
    expect(await lookupWith(child.key)).toBe(503);
    const rotated = await call(env, 'partner-rotate-child-key', { key: partner.key, body: { child_api_key_id: child.api_key_id } });
    expect(rotated.status).toBe(200);
    expect(await lookupWith(child.key)).toBe(401);
    expect(await lookupWith(rotated.body.key as string)).toBe(503);
  });

  it('a change committed elsewhere (another process, psql) reaches the cache by notification', async () => {
    const { child } = await createChildVia(env, partner.key);
    expect(await lookupWith(child.key)).toBe(503);
    await env.db`update api_keys set status = 'revoked' where id = ${child.api_key_id}`;
    await env.authSync();
    expect(await lookupWith(child.key)).toBe(401);
  });

  it('a partner that loses its partner flag elsewhere is refused at once after the notification', async () => {
    const p = await seedPartner(env.deps, { name: 'Flag flips' });
    expect((await call(env, 'partner-pool-state', { key: p.key })).status).toBe(200);
    await env.db`update accounts set is_partner = false where id = ${p.account_id}`;
    await env.authSync();
    expect((await call(env, 'partner-pool-state', { key: p.key })).status).toBe(403);
  });

  it('only changes that authentication reads are announced', async () => {
    const { child } = await createChildVia(env, partner.key);
    const seen: string[] = [];
    const sub = await env.db.listen(AUTH_CHANGED_CHANNEL, (payload) => seen.push(payload));
    try {
      await env.db`update api_keys set name = 'Renamed elsewhere' where id = ${child.api_key_id}`;
      await env.db`update api_keys set status = 'active' where id = ${child.api_key_id}`; // unchanged
      await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${child.api_key_id}`;
      await env.authSync();
    } finally {
      await sub.unlisten();
    }
    expect(seen.filter((p) => !p.startsWith(AUTH_PROBE_PREFIX))).toEqual(['api_keys']);
  });

  it('a truncate elsewhere is announced too', async () => {
    // Its own database: this empties it.
    const own = await createTestEnv();
    try {
      const p = await seedPartner(own.deps, { name: 'Truncated' });
      expect((await call(own, 'partner-pool-state', { key: p.key })).status).toBe(200);
      await own.db`truncate accounts, api_keys cascade`;
      await own.authSync();
      expect((await call(own, 'partner-pool-state', { key: p.key })).status).toBe(401);
    } finally {
      await own.close();
    }
  });

  it.runIf(usingPostgres)('clears everything when the listening connection comes back, since notifications may have been missed', async () => {
    const { child } = await createChildVia(env, partner.key);
    expect(await lookupWith(child.key)).toBe(503);
    expect(cache().size).toBeGreaterThan(0);
    await env.db`alter table api_keys disable trigger api_keys_auth_changed`;
    try {
      await env.db`update api_keys set status = 'revoked' where id = ${child.api_key_id}`;
    } finally {
      await env.db`alter table api_keys enable trigger api_keys_auth_changed`;
    }
    await env.db`select pg_terminate_backend(pid) from pg_stat_activity
                 where datname = current_database() and query ilike 'listen%' and pid <> pg_backend_pid()`;
    const deadline = Date.now() + 15_000;
    while (cache().size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(cache().size).toBe(0);
    expect(await lookupWith(child.key)).toBe(401);
  });
});
