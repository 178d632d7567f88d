import { createApiLookupRecorder, createWriteBehind, grantCredits, type Logger, type Sql, silentLogger, type Verdict } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { realIpDeps } from './support/ip.ts';
import { seedDirectAccount, seedDirectKey } from './support/seed.ts';

/**
 * Reports written behind the requests that make them (write-behind.ts): many reports of one key are
 * one row update, at most one write is in flight however slow the database, a failed batch is kept
 * for the next, and the memory held is bounded. Then the api-lookup history built on it, over real
 * SQL and through ip-to-company.
 */
let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ pool: 4, ip: realIpDeps({ providers: [] }) });
});
afterAll(() => env.close());

interface Count {
  key: string;
  n: number;
  last: string;
}

/** A write-behind whose writes go to `write`, with its background tasks kept to await. */
function gathering(write: (batch: Count[]) => Promise<unknown>, extra: { maxPending?: number; log?: Logger } = {}) {
  const tasks: Promise<unknown>[] = [];
  const host = {
    background: (_name: string, task: () => Promise<unknown>) => void tasks.push(task()),
    log: extra.log ?? silentLogger,
    flushAfterMs: 5,
  };
  const wb = createWriteBehind<Count>(host, {
    name: 'test-counts',
    merge: (into, item) => {
      into.n += item.n;
      into.last = item.last;
    },
    write,
    ...(extra.maxPending !== undefined ? { maxPending: extra.maxPending } : {}),
  });
  const add = (key: string, last = 'x', n = 1) => wb.add(key, { key, n, last });
  return { wb, add, settled: async () => void (await Promise.all(tasks)) };
}

describe('write-behind', () => {
  it('merges the reports of a key and writes them all with one write, a moment later', async () => {
    const batches: Count[][] = [];
    const { wb, add, settled } = gathering(async (b) => batches.push(b));
    for (let i = 0; i < 100; i++) add('hot', `v${i}`);
    add('cold', 'c', 3);
    expect(batches).toHaveLength(0);
    expect(wb.pending).toBe(2);
    await settled();
    expect(batches).toEqual([
      [
        { key: 'hot', n: 100, last: 'v99' },
        { key: 'cold', n: 3, last: 'c' },
      ],
    ]);
    expect(wb.pending).toBe(0);
  });

  it('never has two writes in flight: reports made during a slow write wait for the next, merged', async () => {
    let inFlight = 0;
    let most = 0;
    const batches: Count[][] = [];
    let release: () => void = () => undefined;
    const { wb, add, settled } = gathering(async (b) => {
      inFlight++;
      most = Math.max(most, inFlight);
      batches.push(b);
      await new Promise<void>((r) => {
        release = r;
      });
      inFlight--;
    });
    add('k');
    const first = wb.flush();
    await new Promise((r) => setTimeout(r, 10));
    // The first write is stuck; 500 more reports and three more flushes queue behind it.
    for (let i = 0; i < 500; i++) add('k');
    const more = [wb.flush(), wb.flush(), wb.flush()];
    await new Promise((r) => setTimeout(r, 10));
    expect(batches).toHaveLength(1);
    release();
    await first;
    await new Promise((r) => setTimeout(r, 10));
    release();
    await Promise.all(more);
    await settled();
    expect(most).toBe(1);
    expect(batches.map((b) => b.map((c) => c.n))).toEqual([[1], [500]]);
  });

  it('keeps a failed batch, folds newer reports in over it, and writes it all with the next flush', async () => {
    let fail = true;
    const batches: Count[][] = [];
    const { wb, add } = gathering(async (b) => {
      if (fail) throw new Error('connection lost');
      batches.push(b);
    });
    add('a', 'old', 4);
    await wb.flush();
    expect(wb.pending).toBe(1);
    add('a', 'new', 1);
    fail = false;
    await wb.flush();
    expect(batches).toEqual([[{ key: 'a', n: 5, last: 'new' }]]);
  });

  it('drops a batch the database refuses for its data (it would be refused forever), and goes on with the next', async () => {
    const errors: unknown[] = [];
    const log: Logger = { ...silentLogger, error: (msg, fields) => errors.push({ msg, fields }) };
    const batches: Count[][] = [];
    const { wb, add } = gathering(
      async (b) => {
        if (b.some((c) => c.key === 'poison')) throw Object.assign(new Error('value too long'), { code: '22001' });
        batches.push(b);
      },
      { log },
    );
    add('poison');
    add('a');
    await wb.flush();
    expect(wb.pending).toBe(0);
    expect(errors).toEqual([
      { msg: 'test-counts: a batch the database refuses for its data was dropped', fields: { error: 'value too long', reports: 2 } },
    ]);
    add('b');
    await wb.flush();
    expect(batches).toEqual([[{ key: 'b', n: 1, last: 'x' }]]);
  });

  it('holds at most maxPending keys while the database is away, and says how many reports it dropped', async () => {
    const warnings: unknown[] = [];
    const log: Logger = { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) };
    let fail = true;
    const batches: Count[][] = [];
    const { wb, add } = gathering(
      async (b) => {
        if (fail) throw new Error('down');
        batches.push(b);
      },
      { maxPending: 10, log },
    );
    for (let i = 0; i < 25; i++) add(`k${i}`);
    add('k0'); // a key already held still counts
    expect(wb.pending).toBe(10);
    await wb.flush();
    expect(warnings).toContainEqual({ msg: 'test-counts: reports dropped while the database was behind', fields: { dropped: 15 } });
    fail = false;
    await wb.flush();
    expect(batches[0]?.map((c) => [c.key, c.n])).toEqual([['k0', 2], ...Array.from({ length: 9 }, (_, i) => [`k${i + 1}`, 1])]);
  });
});

describe('api lookup history', () => {
  const verdict = (ip: string, company = 'Apple Inc.'): Verdict =>
    ({
      ip,
      identified: true,
      domain: 'apple.com',
      company_name: company,
      confidence: 0.9,
      confidence_level: 'confirmed',
      traffic_type: 'business',
      reason: 'test',
      matches: [],
      vpn_provider: null,
      country_code: 'US',
    }) as Verdict;

  const rowsOf = async (apiKeyId: string) =>
    env.db<{ ip: string; lookup_count: number; company_name: string }>`
      select host(ip) as ip, lookup_count, company_name from api_lookups where api_key_id = ${apiKeyId} order by ip`;

  it('adds a batch in one statement: counts summed, the last company kept, two spellings of one address one row', async () => {
    const account = await seedDirectAccount(env.deps, 'History');
    const key = await seedDirectKey(env.deps, account.account_id);
    const statements: string[] = [];
    const counting = Object.assign((strings: TemplateStringsArray, ...values: unknown[]) => {
      statements.push(strings.join('?'));
      return (env.db as unknown as (s: TemplateStringsArray, ...v: unknown[]) => unknown)(strings, ...values);
    }, env.db) as unknown as Sql;
    const recorder = createApiLookupRecorder({ db: counting, log: silentLogger, background: () => undefined });
    for (let i = 0; i < 30; i++) recorder.record(key.api_key_id, verdict('17.253.1.1', `Apple ${i}`));
    recorder.record(key.api_key_id, verdict('2001:db8::1'));
    recorder.record(key.api_key_id, verdict('2001:0db8:0000::1'));
    // Not a business, or not identified: nobody to list, nothing gathered.
    recorder.record(key.api_key_id, { ...verdict('10.9.9.9'), traffic_type: 'isp' } as Verdict);
    recorder.record(key.api_key_id, { ...verdict('10.9.9.8'), identified: false } as Verdict);
    await recorder.flush();
    expect(statements).toHaveLength(1);
    expect(await rowsOf(key.api_key_id)).toEqual([
      { ip: '17.253.1.1', lookup_count: 30, company_name: 'Apple 29' },
      { ip: '2001:db8::1', lookup_count: 2, company_name: 'Apple Inc.' },
    ]);
    recorder.record(key.api_key_id, verdict('17.253.1.1', 'Apple Inc.'));
    await recorder.flush();
    expect((await rowsOf(key.api_key_id))[0]).toEqual({ ip: '17.253.1.1', lookup_count: 31, company_name: 'Apple Inc.' });
  });

  it('skips the reports of a key that no longer exists, and still writes the rest of the batch', async () => {
    const account = await seedDirectAccount(env.deps, 'History gone');
    const kept = await seedDirectKey(env.deps, account.account_id);
    const recorder = createApiLookupRecorder({ db: env.db, log: silentLogger, background: () => undefined });
    recorder.record(crypto.randomUUID(), verdict('17.253.2.1'));
    recorder.record(kept.api_key_id, verdict('17.253.2.2'));
    await recorder.flush();
    expect(await rowsOf(kept.api_key_id)).toEqual([{ ip: '17.253.2.2', lookup_count: 1, company_name: 'Apple Inc.' }]);
  });

  it('counts every one of many concurrent ip-to-company lookups of one address, and list-visitors shows them at once', async () => {
    const account = await seedDirectAccount(env.deps, 'History load');
    const key = await seedDirectKey(env.deps, account.account_id);
    await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 50 } });
    const lookups = 60;
    const lookUp = () => call(env, 'ip-to-company', { key: key.key, body: { ip: '17.253.144.10' } });
    // The first is the paid lookup; the rest are answered from the cache, free, all at once.
    expect((await lookUp()).body).toMatchObject({ identified: true, cached: false });
    const answers = await Promise.all(Array.from({ length: lookups - 1 }, lookUp));
    expect(answers.map((a) => [a.status, a.body.cached])).toEqual(Array(lookups - 1).fill([200, true]));
    // No settling: list-visitors writes this process's gathered lookups before it reads.
    const listed = await call(env, 'list-visitors', { key: key.key, query: { source: 'api' } });
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ total: 1, visitors: [{ ip: '17.253.144.10', lookup_count: lookups, domain: 'apple.com' }] });
  });
});
