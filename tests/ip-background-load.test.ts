import { setTimeout as sleep } from 'node:timers/promises';
import { type BuiltDeps, buildDeps, grantCredits, type IpDataSources, identifyCompany, parseEnv, silentLogger } from '@sightline/core';
import { createNodeWebhookTransport, packageIpSources } from '@sightline/host';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRET } from './support/app.ts';
import { openTestDatabase, type TestDatabase } from './support/db.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * The server answers before its local IP data is loaded (issue 14, cold start): lookups that
 * arrive meanwhile wait for the data instead of failing, and a failed load is reported, not hung on.
 */
let t: TestDatabase | undefined;
let deps: BuiltDeps | undefined;
afterEach(async () => {
  await deps?.close();
  // deps.close() closed the connection already; drop() still removes a Postgres test database.
  await t?.drop().catch(() => undefined);
  deps = undefined;
  t = undefined;
});

/** The shipped data, held back until `open()`, or failing then with `fail()`. */
function gatedSources() {
  let release: (ok: boolean) => void = () => undefined;
  const gate = new Promise<boolean>((r) => {
    release = r;
  });
  const sources: IpDataSources = {
    base: async () => {
      if (!(await gate)) throw new Error('the ASN data file is damaged');
      return packageIpSources.base();
    },
    country: packageIpSources.country,
  };
  return { sources, open: () => release(true), fail: () => release(false) };
}

async function build(sources: IpDataSources, onIpDataError?: (err: unknown) => void) {
  t = await openTestDatabase({ pool: 2 });
  deps = await buildDeps(parseEnv({ IP_DATA: '1', AUTH_CACHE_TTL_SECONDS: '0' }), {
    db: t.db,
    secret: TEST_SECRET,
    log: silentLogger,
    webhooks: createNodeWebhookTransport({ allowPrivate: false }),
    listens: false,
    ipSources: sources,
    loadIpInBackground: true,
    ...(onIpDataError ? { onIpDataError } : {}),
  });
  const account = await seedDirectAccount(deps, 'Early caller');
  await grantCredits({ ctx: deps, input: { accountId: account.account_id, credits: 100 } });
  return { deps, account };
}

describe('local IP data loaded behind a server that already answers', () => {
  it('a lookup made while the data loads waits for it and answers from it', async () => {
    const gated = gatedSources();
    const { deps, account } = await build(gated.sources);
    expect(deps.ip).toBeUndefined();
    let settled = false;
    const lookup = identifyCompany({
      ctx: deps,
      input: { ip: '185.65.134.1', accountId: account.account_id, apiKeyId: account.api_key_id },
    }).finally(() => {
      settled = true;
    });
    await sleep(100);
    expect(settled).toBe(false);
    gated.open();
    expect(await lookup).toMatchObject({ ip: '185.65.134.1', traffic_type: 'vpn', vpn_provider: 'Mullvad' });
    expect(deps.ip).toBeDefined();
  });

  it('a load that fails is reported, and a lookup waiting on it is a 503, not a hang', async () => {
    const gated = gatedSources();
    const reported: unknown[] = [];
    const { deps, account } = await build(gated.sources, (err) => reported.push(err));
    const lookup = identifyCompany({
      ctx: deps,
      input: { ip: '185.65.134.1', accountId: account.account_id, apiKeyId: account.api_key_id },
    }).catch((err: unknown) => err);
    gated.fail();
    expect(await lookup).toMatchObject({ status: 503 });
    expect(reported).toHaveLength(1);
    expect(String(reported[0])).toMatch(/damaged/);
  });
});
