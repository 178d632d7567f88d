import { randomUUID } from 'node:crypto';
import { createDirectKey, grantCredits } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, replicaEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount, seedPartner, uniqueDomain } from './support/seed.ts';

/**
 * Erasure on request (docs/operating.md, "Data-protection requests"): one address or one person,
 * from everything an account holds, in one transaction, answered with what went per table. Every
 * table is read for the erased value afterwards, whatever its columns (a table added later that
 * keeps an address is caught), and a row trigger on every table counts what the erasure wrote, so
 * the answer is shown to name every table it changed, with the right count.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
  await env.db.exec(`
    create table test_erasure_writes (tbl text primary key, n integer not null);
    create or replace function test_erasure_write() returns trigger language plpgsql as $fn$
    begin
      -- A partition's rows are its table's (tracker_events_w20261123 is tracker_events).
      insert into test_erasure_writes values (regexp_replace(TG_TABLE_NAME, '_w[0-9]{8}$|_default$', ''), 1)
      on conflict (tbl) do update set n = test_erasure_writes.n + 1;
      return null;
    end $fn$;
    -- Every table that holds rows: plain tables and partitioned parents (a partition's rows fire its parent's trigger).
    create or replace function test_erasure_install() returns void language plpgsql as $fn$
    declare r record;
    begin
      for r in select c.relname from pg_class c join pg_namespace s on s.oid = c.relnamespace
               where s.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition and c.relname <> 'test_erasure_writes' loop
        execute format('drop trigger if exists test_erasure_write on %I', r.relname);
        execute format('create trigger test_erasure_write after insert or update or delete on %I for each row execute function test_erasure_write()', r.relname);
      end loop;
    end $fn$;
    -- Where a text occurs, in any column of any table: the row as JSON holds every column as text.
    create or replace function test_tables_naming(p_needle text) returns table (tbl text, n bigint) language plpgsql as $fn$
    declare r record; c bigint;
    begin
      for r in select c2.relname from pg_class c2 join pg_namespace s on s.oid = c2.relnamespace
               where s.nspname = 'public' and c2.relkind in ('r', 'p') and not c2.relispartition and c2.relname not like 'test_%' loop
        execute format('select count(*) from %I x where strpos(to_jsonb(x)::text, $1) > 0', r.relname) into c using p_needle;
        if c > 0 then tbl := r.relname; n := c; return next; end if;
      end loop;
    end $fn$;
    select test_erasure_install();`);
});
afterAll(async () => {
  await env.close();
});

const tablesNaming = async (needle: string) =>
  Object.fromEntries((await env.db<{ tbl: string; n: number }>`select tbl, n::int as n from test_tables_naming(${needle})`).map((r) => [r.tbl, r.n]));
/** What the erasure wrote, per table, by the triggers. */
async function writesDuring(work: () => Promise<unknown>): Promise<Record<string, number>> {
  await env.db`delete from test_erasure_writes`;
  await work();
  const rows = await env.db<{ tbl: string; n: number }>`select tbl, n from test_erasure_writes`;
  await env.db`delete from test_erasure_writes`;
  return Object.fromEntries(rows.map((r) => [r.tbl, r.n]));
}
const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
/**
 * Writes that are not the erasure's own: the call counted in usage_daily (every authenticated call
 * is), and counters that triggers keep over the rows the erasure removes (no address in them).
 */
const NOT_ERASURE = new Set(['usage_daily', 'visitor_listing_counts']);
const erasureWrites = (writes: Record<string, number>) => Object.fromEntries(Object.entries(writes).filter(([t]) => !NOT_ERASURE.has(t)));

type Account = Awaited<ReturnType<typeof seedDirectAccount>>;

/** Everything an account can hold about an address: raw events, the visitor, its identification, lookups, caches, debits, webhooks. */
async function holdAddress(a: Account, ip: string) {
  const [ev] = await env.db<{ id: string }>`
    insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url)
    values (${a.website_id}, ${a.api_key_id}, 'pageview', ${ip}::inet, false, 's-erase', 'https://example.com/') returning id`;
  await env.db`insert into tracker_queue (event_id) values (${ev?.id ?? null})`;
  const [ident] = await env.db<{ id: string }>`
    insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type, traffic_type, country, domain, company_name)
    values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, now(), 'identified', now(), 'company', 'business', 'GB', 'acme.example', 'Acme')
    returning id`;
  await env.db`
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, identification_id, identified_count)
    values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, now(), now(), 1, ${ident?.id ?? null}, 1)`;
  await env.db`insert into visitor_sessions (website_id, ip, session_id) values (${a.website_id}, ${ip}::inet, 's-erase')`;
  await env.db`insert into ip_cache (account_id, operation, ip, result, expires_at) values (${a.account_id}, 'ip-to-company', ${ip}::inet, '{}', now() + interval '7 days')`;
  await env.db`insert into api_lookups (api_key_id, ip, domain, company_name, confidence, country, label_id)
               values (${a.api_key_id}, ${ip}::inet, 'acme.example', 'Acme', 0.9, 'GB', sl_search_label('Acme acme.example'))`;
  await env.db`insert into credit_transactions (account_id, type, amount, operation, ip) values (${a.account_id}, 'debit', 1, 'ip-to-company', ${ip}::inet)`;
  const body = JSON.stringify({ event: 'visitor_identified', timestamp: new Date().toISOString(), data: { ip, identification_id: ident?.id } });
  const [e] = await env.db<{ id: string }>`
    insert into events (partner_account_id, child_api_key_id, destination, event, body, delivery_status, attempts, delivered_at)
    values (${a.account_id}, ${a.api_key_id}, 'child', 'visitor_identified', ${body}, 'delivered', 1, now()) returning id`;
  await env.db`insert into webhook_attempts (event_id, attempt, url, is_retry, claimed_at, finished_at, succeeded)
               values (${e?.id ?? null}, 1, 'https://receiver.example/', false, now(), now(), true)`;
}

/** Everything an account can hold about a person: an individual identification, messages to them, them as a user, webhooks and stored answers naming them. */
async function holdPerson(a: Account, url: string, ip: string) {
  const [ident] = await env.db<{ id: string }>`
    insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type, traffic_type, country,
      domain, company_name, person_linkedin_url, person_linkedin_name, person_linkedin_title)
    values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, now(), 'identified', now(), 'individual', 'business', 'US', 'acme.example', 'Acme',
      ${url}, 'Erin Erased', 'CTO')
    returning id`;
  await env.db`
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, identification_id, identified_count, label_id)
    values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, now(), now(), 1, ${ident?.id ?? null}, 1, sl_search_label('Erin Erased Acme acme.example'))`;
  const [user] = await env.db<{ id: string }>`
    insert into connected_users (account_id, name, linkedin_url) values (${a.account_id}, 'Erin Erased', ${url}) returning id`;
  await env.db`insert into connect_links (account_id, token_hash, expires_at, used_at, user_id)
               values (${a.account_id}, md5(random()::text) || md5(random()::text), now() + interval '1 day', now(), ${user?.id ?? null})`;
  const [other] = await env.db<{ id: string }>`
    insert into connected_users (account_id, name, linkedin_url) values (${a.account_id}, 'Sam Sender', ${`https://www.linkedin.com/in/sender-${randomUUID()}`}) returning id`;
  for (const [by, to] of [
    [other?.id, url],
    [user?.id, 'https://www.linkedin.com/in/someone-else'],
  ]) {
    await env.db`
      insert into messages (account_id, user_id, idempotency_key, prospect_url, research_summary, research_source, generated_message,
        message_type, word_count, character_count, engine, credits_charged)
      values (${a.account_id}, ${by ?? null}, ${randomUUID()}, ${to ?? null}, '{}', 'caller', 'Hello', 'connection_request', 1, 5, 'builtin', 1)`;
  }
  await env.db`
    insert into idempotent_requests (account_id, idempotency_key, operation, request_hash, state, response_status, response_body, completed_at)
    values (${a.account_id}, ${randomUUID()}, 'api-full-request', repeat('a', 64), 'completed', 200, ${JSON.stringify({ prospect_url: url })}, now())`;
  // ip-to-best-fit's stored result for another address names them as a decision maker.
  const bestFit = { domain: 'acme.example', decision_makers: [{ name: 'Erin Erased', title: 'CTO', linkedin_url: url }] };
  await env.db`
    insert into ip_cache (account_id, operation, ip, result, expires_at)
    values (${a.account_id}, 'ip-to-best-fit', '203.0.113.9'::inet, ${JSON.stringify(bestFit)}::text::jsonb, now() + interval '7 days')`;
  const body = JSON.stringify({ event: 'user.connected', timestamp: new Date().toISOString(), data: { linkedin_url: url } });
  await env.db`
    insert into events (partner_account_id, destination, event, body, delivery_status, attempts)
    values (${a.account_id}, 'account', 'user.connected', ${body}, 'no_destination', 0)`;
}

describe('erasing an address', () => {
  it('removes it from every table the account holds it in, in one answer that names each table and its count', async () => {
    const a = await seedDirectAccount(env.deps, 'Erase address');
    const ip = '198.51.100.199';
    await holdAddress(a, ip);
    const before = await tablesNaming(ip);
    expect(Object.keys(before).sort()).toEqual(
      ['api_lookups', 'credit_transactions', 'events', 'identifications', 'ip_cache', 'tracker_events', 'visitor_sessions', 'visitors'].sort(),
    );
    let answer: { status: number; body: Record<string, unknown> } | undefined;
    const writes = await writesDuring(async () => {
      answer = await call(env, 'api-erase-personal-data', { key: a.key, body: { ip } });
    });
    expect(answer?.status).toBe(200);
    expect(await tablesNaming(ip)).toEqual({});
    // The answer counts every row the triggers saw written, table by table (usage counting aside).
    const erased = erasureWrites(writes);
    expect(nonZero(answer?.body.erased as Record<string, number>)).toEqual(erased);
    expect(erased).toEqual({
      tracker_events: 1,
      tracker_queue: 1,
      visitor_sessions: 1,
      visitors: 1,
      identifications: 1,
      ip_cache: 1,
      api_lookups: 1,
      credit_transactions: 1,
      webhook_attempts: 1,
      events: 1,
    });
    // The ledger line stays, without the address.
    expect((await env.db`select 1 from credit_transactions where account_id = ${a.account_id}`).length).toBe(1);
  });

  it('touches only what the account holds; the operator erases it from every account', async () => {
    const a = await seedDirectAccount(env.deps, 'Holder A');
    const b = await seedDirectAccount(env.deps, 'Holder B');
    const ip = '2001:db8::beef';
    await holdAddress(a, ip);
    await holdAddress(b, ip);
    const res = await call(env, 'api-erase-personal-data', { key: a.key, body: { ip: '2001:DB8::BEEF' } });
    expect(res.status).toBe(200);
    expect((res.body.erased as Record<string, number>).visitors).toBe(1);
    const left = await env.db<{ website_id: string }>`select website_id from visitors where ip = ${ip}::inet`;
    expect(left).toEqual([{ website_id: b.website_id }]);

    const out = (await runOperatorCommand(env.deps, 'erase', { ip })) as { erased: Record<string, number> };
    expect(out.erased.visitors).toBe(1);
    expect(await tablesNaming(ip)).toEqual({});
  });

  it('answers zeros for an address nobody holds, and changes nothing', async () => {
    const a = await seedDirectAccount(env.deps, 'Nothing held');
    const writes = await writesDuring(async () => {
      const res = await call(env, 'api-erase-personal-data', { key: a.key, body: { ip: '192.0.2.250' } });
      expect(res.status).toBe(200);
      expect(nonZero(res.body.erased as Record<string, number>)).toEqual({});
    });
    const changed = erasureWrites(writes);
    expect(changed).toEqual({});
  });
});

describe('erasing a person', () => {
  it('removes them from everything the account holds, leaving the company identification', async () => {
    const a = await seedDirectAccount(env.deps, 'Erase person');
    const url = 'https://www.linkedin.com/in/erin-erased-4711';
    await holdPerson(a, url, '198.51.100.77');
    const before = await tablesNaming(url);
    expect(Object.keys(before).sort()).toEqual(
      ['connected_users', 'events', 'identifications', 'idempotent_requests', 'ip_cache', 'messages'].sort(),
    );
    expect(Object.keys(await tablesNaming('erin erased'))).toEqual(['search_labels']);

    let answer: { status: number; body: Record<string, unknown> } | undefined;
    const writes = await writesDuring(async () => {
      answer = await call(env, 'api-erase-personal-data', { key: a.key, body: { linkedin_url: 'https://linkedin.com/in/Erin-Erased-4711/' } });
    });
    expect(answer?.status, JSON.stringify(answer?.body)).toBe(200);
    expect(await tablesNaming(url)).toEqual({});
    expect(await tablesNaming('Erin Erased')).toEqual({});
    expect(await tablesNaming('erin erased')).toEqual({});
    const changed = erasureWrites(writes);
    expect(nonZero(answer?.body.erased as Record<string, number>)).toEqual(changed);
    expect(changed).toEqual({
      identifications: 1,
      visitors: 1,
      search_labels: 1,
      messages: 2,
      connect_links: 1,
      connected_users: 1,
      idempotent_requests: 1,
      ip_cache: 1,
      events: 1,
    });
    const [ident] = await env.db<{ identification_type: string; company_name: string }>`
      select identification_type, company_name from identifications where website_id = ${a.website_id}`;
    expect(ident).toEqual({ identification_type: 'company', company_name: 'Acme' });
    const [label] = await env.db<{
      label: string;
    }>`select l.label from visitors v join search_labels l on l.id = v.label_id where v.website_id = ${a.website_id}`;
    expect(label?.label).toBe('acme acme.example');
  });
});

describe('erasing a person a provider spelt differently', () => {
  it('finds their identification by the canonical profile, and the webhook that carried the provider’s spelling', async () => {
    const a = await seedDirectAccount(env.deps, 'Spelling');
    const spelt = 'http://linkedin.com/in/Kim-Spelt-77/';
    await env.db`
      insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type, traffic_type, country,
        domain, company_name, person_linkedin_url, person_linkedin_name)
      values (${a.website_id}, '198.51.100.78', ${a.api_key_id}, now(), 'identified', now(), 'individual', 'business', 'US', 'acme.example',
        'Acme', ${spelt}, 'Kim Spelt')`;
    const body = JSON.stringify({ event: 'visitor_identified', data: { individual: { linkedin_url: spelt } } });
    await env.db`insert into events (partner_account_id, child_api_key_id, destination, event, body, delivery_status)
                 values (${a.account_id}, ${a.api_key_id}, 'child', 'visitor_identified', ${body}, 'no_destination')`;
    const res = await call(env, 'api-erase-personal-data', { key: a.key, body: { linkedin_url: 'https://www.linkedin.com/in/kim-spelt-77' } });
    expect(res.status).toBe(200);
    expect(nonZero(res.body.erased as Record<string, number>)).toMatchObject({ identifications: 1, events: 1 });
    expect(await tablesNaming('Kim-Spelt-77')).toEqual({});
  });
});

describe('refusals', () => {
  it('is a 400 for no field, both fields, a bad address or a profile URL that is not one, and changes nothing', async () => {
    const a = await seedDirectAccount(env.deps, 'Refused');
    for (const body of [
      {},
      { ip: '192.0.2.1', linkedin_url: 'https://www.linkedin.com/in/someone' },
      { ip: '999.1.1.1' },
      { linkedin_url: 'https://www.linkedin.com/company/acme' },
      { ip: '192.0.2.1', extra: true },
    ]) {
      const writes = await writesDuring(async () => {
        const res = await call(env, 'api-erase-personal-data', { key: a.key, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.success).toBe(false);
        expect(typeof res.body.error).toBe('string');
      });
      const changed = erasureWrites(writes);
      expect(changed).toEqual({});
    }
  });

  it('is a 401 without a key and a 403 for a key scoped to its own websites', async () => {
    expect((await call(env, 'api-erase-personal-data', { body: { ip: '192.0.2.1' } })).status).toBe(401);
    const partner = await seedPartner(env.deps);
    const tracker = await createDirectKey({ ctx: env.deps, input: { accountId: partner.account_id, domain: uniqueDomain('scoped') } });
    const res = await call(env, 'api-erase-personal-data', { key: tracker.key, body: { ip: '192.0.2.1' } });
    expect(res.status).toBe(403);
  });

  it('the CLI refuses the same input with its usage', async () => {
    await expect(runOperatorCommand(env.deps, 'erase', {})).rejects.toThrow(/exactly one of --ip and --linkedin-url/);
    await expect(runOperatorCommand(env.deps, 'erase', { ip: 'nope' })).rejects.toThrow(/--ip must be an IPv4 or IPv6 address/);
  });
});

describe('an erased address is not served from a copy above Postgres', () => {
  it('the erasing process and another one (told by the erasure’s notification) both look it up afresh', async () => {
    const ipEnv = await createTestEnv({ settings: { IP_DATA: '1' } });
    const other = await replicaEnv(ipEnv, { settings: { IP_DATA: '1' } });
    try {
      const a = await seedDirectAccount(ipEnv.deps, 'Erase cached');
      await grantCredits({ ctx: ipEnv.deps, input: { accountId: a.account_id, credits: 100 } });
      const lookUp = async (e: TestEnv) => {
        const res = await call(e, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body as { cached: boolean; domain: string };
      };
      expect(await lookUp(ipEnv)).toMatchObject({ cached: false, domain: 'apple.com' });
      // Both processes now hold the result in memory (and in Redis, when REDIS_URL is set).
      expect(await lookUp(ipEnv)).toMatchObject({ cached: true });
      expect(await lookUp(other)).toMatchObject({ cached: true });
      const held = other.deps.ip?.recentResults;
      expect(held?.size).toBeGreaterThan(0);

      const erased = await call(ipEnv, 'api-erase-personal-data', { key: a.key, body: { ip: '17.253.144.10' } });
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
      expect(erased.body).toMatchObject({ erased: { ip_cache: 1 } });
      // The erasing process dropped its copies before answering.
      expect(ipEnv.deps.ip?.recentResults?.size).toBe(0);
      // The other process dropped its copies when the erasure's notification arrived.
      await expect.poll(() => held?.size, { timeout: 10_000 }).toBe(0);
      expect(await lookUp(other)).toMatchObject({ cached: false, domain: 'apple.com' });
    } finally {
      await other.close();
      await ipEnv.close();
    }
  }, 120_000);
});
