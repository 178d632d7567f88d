import { DEFAULT_RETENTION, monthsBefore, parseEnv, sweepDataLifecycle } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * The data lifecycle (docs/operating.md, "Data lifecycle"): raw tracker events live in weekly
 * partitions and leave a whole week at a time; ended webhook events, expired cached lookups and
 * ended connect links go after their retention; a visitor's address and person go from every row
 * that keeps counting them once they have not been seen for the personal-data period.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env.close();
});

const DAY = 86_400_000;
const NOW = new Date();
const ago = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();
const utcDay = (iso: string) => iso.slice(0, 10);
/** The Monday (UTC) of the week `iso` falls in, as partitions are named. */
function weekOf(iso: string): string {
  const d = new Date(`${utcDay(iso)}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d.toISOString().slice(0, 10).replaceAll('-', '');
}
const partitionExists = async (week: string) =>
  (await env.db<{ r: string | null }>`select to_regclass(${`tracker_events_w${week}`})::text as r`)[0]?.r !== null;

async function insertEvent(site: { website_id: string; api_key_id: string }, at: string, session: string, beaconId?: string) {
  await env.db`
    insert into tracker_events (website_id, api_key_id, received_at, received_on, kind, ip, is_bot, session_id, url, active_ms, beacon_id)
    values (${site.website_id}, ${site.api_key_id}, ${at}::timestamptz, (${at}::timestamptz at time zone 'UTC')::date,
            ${beaconId ? 'engagement' : 'pageview'}, '203.0.113.5', false, ${session}, 'https://example.com/',
            ${beaconId ? 1000 : null}, ${beaconId ?? null})`;
}

describe('raw tracker events: weekly partitions', () => {
  it('drops the weeks wholly past retention, keeps newer ones and makes weeks ahead', async () => {
    const site = await seedDirectAccount(env.deps, 'Partitions');
    // Rows of weeks no partition was made for land in the default partition...
    await insertEvent(site, ago(60), 'old');
    await insertEvent(site, ago(20), 'recent');
    await insertEvent(site, ago(0), 'today');
    const [inDefault] = await env.db<{ n: number }>`select count(*)::int as n from tracker_events_default where website_id = ${site.website_id}`;
    expect(inDefault?.n).toBeGreaterThanOrEqual(2);
    // ...and move into their week when it is made.
    await env.db`select sl_ensure_tracker_event_partitions(${ago(70)}::timestamptz, ${ago(0)}::timestamptz, 0)`;
    const [leftInDefault] = await env.db<{ n: number }>`select count(*)::int as n from tracker_events_default`;
    expect(leftInDefault?.n).toBe(0);
    expect(await partitionExists(weekOf(ago(60)))).toBe(true);

    const report = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect(report.tracker_events.partitions_dropped).toBeGreaterThanOrEqual(1);
    expect(await partitionExists(weekOf(ago(60)))).toBe(false);
    expect(await partitionExists(weekOf(ago(20)))).toBe(true);
    expect(await partitionExists(weekOf(new Date(NOW.getTime() + 28 * DAY).toISOString()))).toBe(true);
    const left = await env.db<{
      session_id: string;
    }>`select session_id from tracker_events where website_id = ${site.website_id} order by received_at`;
    expect(left.map((r) => r.session_id)).toEqual(['recent', 'today']);

    // A second run finds nothing due.
    const again = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect(again.tracker_events).toEqual({ partitions_made: 0, partitions_dropped: 0, default_rows: 0 });
  });

  it('keeps the retention in days: a week partly inside it stays whole', async () => {
    const site = await seedDirectAccount(env.deps, 'Edge');
    const edge = ago(DEFAULT_RETENTION.trackerEventDays - 1);
    await env.db`select sl_ensure_tracker_event_partitions(${edge}::timestamptz, ${ago(0)}::timestamptz, 0)`;
    await insertEvent(site, edge, 'inside');
    await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect((await env.db`select 1 from tracker_events where website_id = ${site.website_id}`).length).toBe(1);
  });

  // Real Postgres: the embedded database has one connection, so nothing can hold a lock beside the sweep.
  it.skipIf(!usingPostgres)(
    'leaves a week whose drop waits for a reader to the next sweep, and does the rest',
    async () => {
      const site = await seedDirectAccount(env.deps, 'Busy reader');
      await env.db`select sl_ensure_tracker_event_partitions(${ago(80)}::timestamptz, ${ago(0)}::timestamptz, 0)`;
      await insertEvent(site, ago(80), 'held');
      const week = weekOf(ago(80));
      const report = await env.db.begin(async (tx) => {
        // A long reader of tracker_events (a report, a backup) holds its lock until it ends.
        await tx`select count(*) from tracker_events`;
        return sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
      });
      expect(report.tracker_events.partitions_dropped).toBe(0);
      expect(await partitionExists(week)).toBe(true);
      const next = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
      expect(next.tracker_events.partitions_dropped).toBeGreaterThanOrEqual(1);
      expect(await partitionExists(week)).toBe(false);
    },
    30_000,
  );

  it('stores an engagement beacon repeated within a day, or across midnight, once', async () => {
    const site = await seedDirectAccount(env.deps, 'Beacons');
    const [w] = await env.db<{ domain: string }>`select domain from websites where id = ${site.website_id}`;
    const beacon = (id: string) =>
      JSON.stringify([
        {
          n: 1,
          tracking_script_id: site.tracking_script_id,
          kind: 'engagement',
          page_host: w?.domain,
          origin_host: null,
          ip: '198.51.100.7',
          is_bot: false,
          session_id: 'dedup',
          url: `https://${w?.domain}/`,
          referrer: null,
          active_ms: 500,
          beacon_id: id,
          user_agent: null,
        },
      ]);
    const collect = async (id: string) =>
      (await env.db<{ stored: boolean }>`select stored from sl_collect_events(${beacon(id)}::text::jsonb)`)[0]?.stored;
    expect(await collect('b-1')).toBe(true);
    expect(await collect('b-1')).toBe(false);
    // Stored yesterday (UTC): today's partition key differs, so the unique index alone would take it again.
    await insertEvent(site, ago(1), 'dedup', 'b-2');
    const [y] = await env.db<{ on: string }>`select received_on::text as on from tracker_events where beacon_id = 'b-2'`;
    expect(y?.on).toBe(utcDay(ago(1)));
    expect(await collect('b-2')).toBe(false);
    const [n] = await env.db<{ n: number }>`select count(*)::int as n from tracker_events where website_id = ${site.website_id}`;
    expect(n?.n).toBe(2);
  });
});

describe('retention of webhook events, cached lookups and connect links', () => {
  it('deletes what ended before its retention, with its attempts, and keeps the rest', async () => {
    const a = await seedDirectAccount(env.deps, 'Retention');
    const event = async (status: string, ended: string | null, created: string) => {
      const [e] = await env.db<{ id: string }>`
        insert into events (partner_account_id, destination, event, body, created_at, delivery_status, attempts, delivered_at, last_attempt_at, next_attempt_at)
        values (${a.account_id}, 'account', 'credits.low', '{}', ${created}::timestamptz, ${status}, ${status === 'pending' ? 0 : 1},
                ${status === 'delivered' ? ended : null}::timestamptz, ${status === 'pending' ? null : ended}::timestamptz, ${status === 'pending' ? created : null}::timestamptz)
        returning id`;
      await env.db`insert into webhook_attempts (event_id, attempt, url, is_retry, claimed_at, finished_at, succeeded)
                   values (${e?.id ?? null}, 1, 'https://receiver.example/', false, ${created}::timestamptz, ${created}::timestamptz, ${status === 'delivered'})`;
      return e?.id;
    };
    const oldDelivered = await event('delivered', ago(31), ago(31));
    const oldFailed = await event('failed', ago(40), ago(41));
    const recentDelivered = await event('delivered', ago(29), ago(29));
    const oldPending = await event('pending', null, ago(60));
    const report = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect(report.events).toBe(2);
    const left = await env.db<{ id: string }>`select id from events where partner_account_id = ${a.account_id}`;
    expect(left.map((r) => r.id).sort()).toEqual([recentDelivered, oldPending].sort());
    const attempts = await env.db<{
      event_id: string;
    }>`select event_id from webhook_attempts where event_id in (${oldDelivered ?? null}, ${oldFailed ?? null})`;
    expect(attempts).toEqual([]);

    // Cached lookups go once expired; connect links once used or expired for CONNECT_LINK_RETENTION_DAYS.
    await env.db`insert into ip_cache (account_id, operation, ip, result, created_at, expires_at) values
      (${a.account_id}, 'ip-to-company', '192.0.2.1', '{}', ${ago(8)}::timestamptz, ${ago(1)}::timestamptz),
      (${a.account_id}, 'ip-to-company', '192.0.2.2', '{}', ${ago(1)}::timestamptz, ${ago(-6)}::timestamptz)`;
    const link = async (created: number, expires: number, used: number | null) =>
      (
        await env.db<{ id: string }>`
        insert into connect_links (account_id, token_hash, created_at, expires_at, used_at)
        values (${a.account_id}, md5(random()::text) || md5(random()::text), ${ago(created)}::timestamptz, ${ago(expires)}::timestamptz,
                ${used === null ? null : ago(used)}::timestamptz) returning id`
      )[0]?.id;
    await link(20, 13, null); // expired 13 days ago
    await link(20, 13, 8); // used 8 days ago
    const usedRecently = await link(10, 3, 6);
    const open = await link(1, -6, null);
    const second = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect(second.ip_cache).toBe(1);
    expect(second.connect_links).toBe(2);
    expect((await env.db<{ ip: string }>`select host(ip) as ip from ip_cache where account_id = ${a.account_id}`).map((r) => r.ip)).toEqual([
      '192.0.2.2',
    ]);
    const links = await env.db<{ id: string }>`select id from connect_links where account_id = ${a.account_id}`;
    expect(links.map((r) => r.id).sort()).toEqual([usedRecently, open].sort());
  });
});

describe('personal data over time', () => {
  it('removes the address of a visitor not seen for the period, and the person of its identification, keeping the counts and the company', async () => {
    const a = await seedDirectAccount(env.deps, 'Ageing');
    const old = monthsBefore(NOW, 13);
    const longAgo = new Date(old.getTime() - 5 * DAY).toISOString();
    const lately = new Date(old.getTime() + 5 * DAY).toISOString();
    const identification = async (ip: string, at: string, individual: boolean) =>
      (
        await env.db<{ id: string }>`
        insert into identifications (website_id, ip, api_key_id, period_start, status, created_at, identified_at, identification_type,
          traffic_type, country, domain, company_name, person_linkedin_url, person_linkedin_name)
        values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, ${at}::timestamptz, 'identified', ${at}::timestamptz, ${at}::timestamptz,
          ${individual ? 'individual' : 'company'}, 'business', 'US', 'acme.example', 'Acme',
          ${individual ? 'https://www.linkedin.com/in/jane-doe' : null}, ${individual ? 'Jane Doe' : null})
        returning id`
      )[0]?.id;
    const visitor = async (ip: string, lastSeen: string, identificationId: string | undefined, label: string) => {
      await env.db`
        insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, identification_id, identified_count, label_id)
        values (${a.website_id}, ${ip}::inet, ${a.api_key_id}, ${lastSeen}::timestamptz, ${lastSeen}::timestamptz, 3, 7, ${identificationId ?? null}, 1,
                sl_search_label(${label}))`;
      await env.db`insert into visitor_sessions (website_id, ip, session_id) values (${a.website_id}, ${ip}::inet, 's1')`;
    };
    const agedId = await identification('203.0.113.70', longAgo, true);
    await visitor('203.0.113.70', longAgo, agedId, 'Jane Doe Acme acme.example');
    const keptId = await identification('203.0.113.71', lately, true);
    await visitor('203.0.113.71', lately, keptId, 'Jane Doe Acme acme.example');
    // Identified long ago, but the visitor came back since: the address stays until they stop.
    const returningId = await identification('203.0.113.72', longAgo, false);
    await visitor('203.0.113.72', lately, returningId, 'Acme acme.example');
    await env.db`insert into api_lookups (api_key_id, ip, first_seen, last_seen, domain, company_name, confidence, country, label_id) values
      (${a.api_key_id}, '203.0.113.80', ${longAgo}::timestamptz, ${longAgo}::timestamptz, 'acme.example', 'Acme', 0.9, 'US', sl_search_label('Acme acme.example')),
      (${a.api_key_id}, '203.0.113.81', ${lately}::timestamptz, ${lately}::timestamptz, 'acme.example', 'Acme', 0.9, 'US', sl_search_label('Acme acme.example'))`;
    await env.db`insert into credit_transactions (account_id, type, amount, operation, ip, created_at) values
      (${a.account_id}, 'debit', 1, 'ip-to-company', '203.0.113.80', ${longAgo}::timestamptz),
      (${a.account_id}, 'debit', 1, 'ip-to-company', '203.0.113.81', ${lately}::timestamptz)`;

    const report = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW, batchSize: 1 } });
    expect(report.aged).toMatchObject({
      visitors: 1,
      visitor_sessions: 1,
      identifications: 1,
      individuals: 1,
      api_lookups: 1,
      credit_transactions: 1,
    });

    const visitors = await env.db<{ ip: string; visit_count: number; pages_viewed: number; label: string; sessions: number }>`
      select host(v.ip) as ip, v.visit_count, v.pages_viewed, l.label,
             (select count(*)::int from visitor_sessions s where s.website_id = v.website_id and s.ip = v.ip) as sessions
      from visitors v join search_labels l on l.id = v.label_id where v.website_id = ${a.website_id} order by v.last_seen, v.ip`;
    const aged = visitors.find((v) => v.ip.startsWith('100::'));
    expect(aged).toMatchObject({ visit_count: 3, pages_viewed: 7, label: 'acme acme.example', sessions: 0 });
    expect(
      visitors
        .map((v) => v.ip)
        .filter((ip) => !ip.startsWith('100::'))
        .sort(),
    ).toEqual(['203.0.113.71', '203.0.113.72']);

    const ids = await env.db<{ id: string; ip: string; identification_type: string; company_name: string; person: string | null }>`
      select id, host(ip) as ip, identification_type, company_name, person_linkedin_url as person from identifications where website_id = ${a.website_id}`;
    const byId = Object.fromEntries(ids.map((i) => [i.id, i]));
    expect(byId[agedId ?? '']).toMatchObject({ identification_type: 'company', company_name: 'Acme', person: null });
    expect(byId[agedId ?? '']?.ip.startsWith('100::')).toBe(true);
    expect(byId[keptId ?? '']).toMatchObject({ ip: '203.0.113.71', identification_type: 'individual' });
    expect(byId[returningId ?? '']?.ip).toBe('203.0.113.72');
    // The label that named the person is still used by the visitor seen lately, so it stays.
    expect((await env.db`select 1 from search_labels where label = 'jane doe acme acme.example'`).length).toBe(1);

    const lookups = await env.db<{
      ip: string;
      company_name: string;
    }>`select host(ip) as ip, company_name from api_lookups where api_key_id = ${a.api_key_id} order by last_seen`;
    expect(lookups[0]?.ip.startsWith('100::')).toBe(true);
    expect(lookups[1]?.ip).toBe('203.0.113.81');
    const debits = await env.db<{
      ip: string | null;
    }>`select host(ip) as ip from credit_transactions where account_id = ${a.account_id} order by created_at`;
    expect(debits.map((d) => d.ip)).toEqual([null, '203.0.113.81']);

    const again = await sweepDataLifecycle({ ctx: env.deps, input: { now: NOW } });
    expect(Object.values(again.aged).every((n) => n === 0)).toBe(true);
  });
});

describe('configuration', () => {
  it('defaults to 30 days of raw and webhook events, 7 of connect links and 13 months of addresses', () => {
    const env = parseEnv({});
    expect([
      env.TRACKER_EVENT_RETENTION_DAYS,
      env.WEBHOOK_EVENT_RETENTION_DAYS,
      env.CONNECT_LINK_RETENTION_DAYS,
      env.PERSONAL_DATA_RETENTION_MONTHS,
    ]).toEqual([30, 30, 7, 13]);
  });

  it('refuses raw rows kept longer than the addresses in them', () => {
    expect(() => parseEnv({ TRACKER_EVENT_RETENTION_DAYS: '400', PERSONAL_DATA_RETENTION_MONTHS: '13' })).toThrow(
      /TRACKER_EVENT_RETENTION_DAYS \(400\)/,
    );
    expect(() => parseEnv({ WEBHOOK_EVENT_RETENTION_DAYS: '90', PERSONAL_DATA_RETENTION_MONTHS: '3' })).toThrow(/WEBHOOK_EVENT_RETENTION_DAYS/);
    expect(() => parseEnv({ PERSONAL_DATA_RETENTION_MONTHS: '1' })).toThrow(/PERSONAL_DATA_RETENTION_MONTHS/);
  });

  it('runs from the operator CLI', async () => {
    const out = (await runOperatorCommand(env.deps, 'data-lifecycle', {})) as { events: number };
    expect(out.events).toBe(0);
  });
});
