import { type FunctionDefinition, grantCredits, policies } from '@sightline/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, fn, socketPeer, type TestEnv } from './app.ts';
import { type FuzzRequest, type FuzzWorld, requestsTo } from './fuzz.ts';
import { seedIcpAccount } from './icps.ts';
import { realIpDeps } from './ip.ts';
import { openapiDocument } from './openapi-check.ts';
import { actsAsUser, isPartnerRoute } from './routes.ts';
import { seedDirectKey, seedPartner } from './seed.ts';
import { refusalProbe } from './snapshot.ts';
import { trackedChild } from './tracker.ts';

/**
 * Issue 15 §2: every endpoint, the tracker's collect and script included, gets FUZZ_RUNS (at least
 * 10,000) generated requests — bodies, query strings and headers written from its documented schema
 * (tests/support/fuzz.ts). Whatever arrives: never a 5xx; every refusal a 4xx in the envelope; and a
 * refused request changes nothing — not one row of any table written (balances, the outbox, every
 * count), by a trigger's count on every table taken after the request's background work is done.
 * An accepted request may write; the next count starts from there. Each answer also meets the
 * document (the test app's response check).
 *
 * The generated requests are the same on every run (a fixed seed per function, FUZZ_SEED changes
 * it), so a red CI is a regression, not a roll of the dice; `FUZZ_SEED=random` explores new inputs,
 * and a failure prints the seed and path that replay it.
 *
 * Two test files share the functions between them (partner routes, the rest), so the two test
 * workers each run half.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const BASE_SEED = process.env.FUZZ_SEED === 'random' ? undefined : Number(process.env.FUZZ_SEED || 15);
/** Each function's own seed: the base and its name, so adding a function leaves the others' requests as they were. */
const seedFor = (name: string) => (BASE_SEED === undefined ? undefined : [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, BASE_SEED));
const SWEEP_SECRET = 'a-fuzz-sweep-secret-of-at-least-thirty-two-characters';

/** The fuzz cases for `functions`, with their own database and world. */
export function describeFuzz(functions: FunctionDefinition[]): void {
  let env: TestEnv;
  let reading: () => Promise<string>;
  let partnerKey = '';
  let partnerAccountId = '';
  /** What every world holds: other tenants' and the account routes' ids, keys that are not the route's, a link token. */
  let common: Omit<FuzzWorld, 'keys'> & { keys: string[] };
  let accountKey = '';
  let userKey = '';

  beforeAll(async () => {
    env = await createTestEnv({ sweepSecret: SWEEP_SECRET, ip: realIpDeps(), reportFlushMs: 0 });
    const partner = await seedPartner(env.deps, { quota: 1_000_000, topup: 1_000 });
    partnerKey = partner.key;
    partnerAccountId = partner.account_id;
    // The account routes' key is a child of a partner whose key no request carries, so no generated
    // partner call can rotate, release or revoke it from under them.
    const host = await seedPartner(env.deps, { name: 'Host partner', quota: 1_000 });
    const site = await trackedChild(env, host.key);
    accountKey = site.key;
    const other = await seedPartner(env.deps, { name: 'Another partner', quota: 100 });
    const foreign = await trackedChild(env, other.key);
    const icp = await seedIcpAccount(env);
    userKey = icp.key;
    // Credits, so a connected user's valid request can be paid for and go all the way.
    await grantCredits({ ctx: env.deps, input: { accountId: icp.account_id, credits: 100_000 } });
    const revoked = await seedPartner(env.deps, { name: 'Revoked partner' });
    await env.db`update api_keys set status = 'revoked' where id = ${revoked.api_key_id}`;
    const link = await env.app.request(fn('api-create-connect-link'), { method: 'POST', headers: { 'x-access-key': icp.key } });
    const { token } = (await link.json()) as { token: string };
    common = {
      ids: [
        site.apiKeyId,
        site.websiteId,
        site.trackingId,
        foreign.apiKeyId,
        foreign.websiteId,
        foreign.trackingId,
        icp.product_id,
        icp.website_id,
        icp.api_key_id,
        icp.user_id,
      ],
      keys: [partner.key, site.key, foreign.key, icp.key, other.key, revoked.key],
      users: [icp.user_id, crypto.randomUUID()],
      tokens: [token],
      urls: [`https://${site.domain}`, `https://${foreign.domain}`, 'https://example.com'],
      sweepSecret: SWEEP_SECRET,
    };
    reading = await refusalProbe(env.db);
  }, 120_000);
  afterAll(() => env.close());

  /**
   * The world one route's requests draw on, its own key first. A partner route gets a fresh child, a
   * direct key to adopt and the partner's events, so what earlier routes' accepted calls did to theirs
   * (rotated, released, revoked) does not leave it only ids that no longer answer.
   */
  async function worldFor(def: FunctionDefinition): Promise<FuzzWorld> {
    if (isPartnerRoute(def)) {
      const child = await trackedChild(env, partnerKey);
      const own = await seedDirectKey(env.deps, partnerAccountId);
      const events = await env.db<{ id: string }>`select id from events order by created_at desc limit 4`;
      return {
        ...common,
        ids: [child.apiKeyId, child.websiteId, own.api_key_id, ...events.map((e) => e.id), ...common.ids],
        keys: [partnerKey, ...common.keys],
      };
    }
    if (actsAsUser(def)) return { ...common, keys: [userKey, ...common.keys] };
    const accountPolicies = [policies.accountKey, policies.accountActor, policies.trackerOwner];
    if (accountPolicies.includes(def.policy)) return { ...common, keys: [accountKey, ...common.keys] };
    return common;
  }

  function documentedPath(def: FunctionDefinition): string {
    const base = def.mount === 'functions' ? `/functions/v1/${def.name}` : `/${def.name}`;
    const path = Object.keys(openapiDocument.paths).find((p) => p === base || p.startsWith(`${base}/`));
    if (!path) throw new Error(`docs/openapi.json has no path for ${def.name}`);
    return path;
  }

  async function send(r: FuzzRequest) {
    const url = new URL(`http://localhost${r.path}`);
    for (const [k, v] of r.query) url.searchParams.append(k, v);
    return env.app.request(
      url.href,
      { method: r.method, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) },
      socketPeer(r.remoteAddress),
    );
  }

  describe.each(functions.map((f) => [f.name, f] as const))('%s', (_name, def) => {
    it(`answers ${RUNS} generated requests without a 5xx; a refusal is a 4xx envelope and changes nothing`, async () => {
      const world = await worldFor(def);
      const seed = seedFor(def.name);
      let before = await reading();
      const seen = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(requestsTo(documentedPath(def), def.method, world, { sweep: def.policy === policies.sweep }), async (r) => {
          const res = await send(r);
          const text = await res.text();
          // Whatever the request started in the background (reports, auto-reloads) has finished.
          await env.settle();
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
          expect(res.status, text.slice(0, 300)).toBeLessThan(500);
          if (res.status >= 400) {
            // HEAD is answered as GET would be, without the body.
            if (r.method !== 'HEAD') {
              const body = JSON.parse(text) as { success?: unknown; error?: unknown };
              expect(body.success).toBe(false);
              expect(typeof body.error === 'string' && body.error.length > 0).toBe(true);
            }
            expect(await reading(), `rows written by a refused request: ${res.status} ${text.slice(0, 200)}`).toBe(before);
          } else {
            before = await reading();
          }
        }),
        { numRuns: RUNS, endOnFailure: true, ...(seed !== undefined ? { seed } : {}) },
      );
      // The generator reaches past the door: some requests are refused, and some are answered past
      // the credential and method checks and the first validation.
      expect([...seen.keys()].some((s) => s >= 400)).toBe(true);
      expect([...seen.keys()].some((s) => s !== 400 && s !== 401 && s !== 405)).toBe(true);
      console.log(def.name, Object.fromEntries([...seen].sort((a, b) => a[0] - b[0])));
    }, 1_800_000);
  });
}
