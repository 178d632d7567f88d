import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, envForDatabase, TEST_SECRET, type TestEnv } from './support/app.ts';
import { openTestDatabase, usingPostgres } from './support/db.ts';
import { childEnv, type StartedServer, startHost } from './support/process.ts';
import { startReceiver } from './support/receiver.ts';
import { freePort, redisServerAvailable, type TestRedisServer, testRedisServer } from './support/redis-server.ts';
import { createChildVia, seedPartner } from './support/seed.ts';
import { clearOfWindowEnd, sleep, until as waitUntil } from './support/wait.ts';

/**
 * Issue 15 §4: two Node servers on one Postgres database, their schedulers on, sharing a Redis — as
 * a production deployment runs them. What one replica does the other must not do again: a due
 * period rolls over once, a visitor is identified and charged once, an event's first attempt is
 * sent once, and a partner's rate limit is one count across both. And a replica killed outright
 * mid-work loses nothing: what it had claimed waits out its lease, then the other finishes it.
 * Counted where a user would count them: in the database and at the webhook receiver.
 */
const run = usingPostgres && redisServerAvailable;
const why = run ? '' : ' (skipped: needs DATABASE_URL and redis-server)';
const SWEEP_SECRET = 'a-replica-sweep-secret-of-at-least-thirty-two-chars';
const LIMIT = 40;

/** Replicas' work takes seconds: waited for longer, and polled less often, than the default. */
const until = (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => waitUntil(what, check, { timeoutMs, everyMs: 100 });

describe.skipIf(!run)(`two replicas on one database${why}`, () => {
  let env: TestEnv;
  let redis: TestRedisServer;
  const replicas: StartedServer[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const base = (i: number) => `http://127.0.0.1:${replicas[i % 2]?.port}/functions/v1`;

  beforeAll(async () => {
    env = await envForDatabase(await openTestDatabase());
    redis = testRedisServer(await freePort());
    await redis.start();
    receiver = await startReceiver();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await receiver?.close();
    await redis?.kill();
    await env?.close();
  });

  /** `visitors` identifications of the site's child identified, and exactly as many of its IDs used. */
  async function expectIdentifiedAndChargedOnce(site: { website: { id: string }; child: { api_key_id: string } }, visitors: number) {
    const [charged] = await env.db<{ used: number; identified: number }>`
      select s.ids_used_this_period as used,
             (select count(*)::int from identifications i where i.website_id = ${site.website.id} and i.status = 'identified') as identified
      from child_subscriptions s where s.api_key_id = ${site.child.api_key_id}`;
    expect(charged?.identified).toBe(visitors);
    expect(charged?.used).toBe(visitors);
  }

  /** Two replicas; each names its database sessions (`replica-0`, `replica-1`) so a test can find them. */
  async function startReplicas() {
    const settings = (n: number) =>
      childEnv({
        DATABASE_URL: `${env.url ?? ''}?application_name=replica-${n}`,
        REDIS_URL: redis.url,
        SIGHTLINE_SECRET: TEST_SECRET,
        SWEEP_SECRET,
        PORT: '0',
        HOST: '127.0.0.1',
        ROLLOVER_INTERVAL_SECONDS: '1',
        RATE_LIMIT_PER_MINUTE: String(LIMIT),
        ALLOW_PRIVATE_WEBHOOKS: 'true',
        // Beacons arrive from this machine; the visitor is the address the test forwards.
        TRUSTED_PROXIES: '127.0.0.1/32',
        DEMO_PARTNER: '0',
      });
    replicas.push(...(await Promise.all([startHost(settings(0)), startHost(settings(1))])));
  }

  it('roll each due period once, identify and charge each visitor once, send each first attempt once, and share one rate limit', async () => {
    // Before the replicas start: a partner whose 24 children's periods are all due.
    const partner = await seedPartner(env.deps, { quota: 10_000 });
    const hook = await call(env, 'partner-set-webhook', { key: partner.key, body: { url: receiver.url } });
    expect(hook.status).toBe(200);
    const children = [];
    for (let i = 0; i < 24; i++) children.push(await createChildVia(env, partner.key, { monthly_id_quota: 100 }));
    const ids = children.map((c) => c.child.api_key_id);
    await env.db`update child_subscriptions set current_period_start = now() - interval '31 days', current_period_end = now() - interval '1 day'
                 where api_key_id in (select unnest(${`{${ids.join(',')}}`}::uuid[]))`;
    await env.settle();

    await startReplicas();

    // Each replica's scheduler runs the rollover every second: both race for the same rows.
    await until('every due period rolled', async () => {
      const [row] = await env.db<{ n: number }>`select count(*)::int as n from child_subscriptions
        where api_key_id in (select unnest(${`{${ids.join(',')}}`}::uuid[])) and current_period_end < now()`;
      return row?.n === 0;
    });
    await sleep(2_500); // a few more rounds of both schedulers
    const rolled = await env.db<{ child: string; n: number }>`
      select child_api_key_id as child, count(*)::int as n from events
      where event = 'child.period_rolled' and child_api_key_id in (select unnest(${`{${ids.join(',')}}`}::uuid[]))
      group by 1`;
    expect(rolled).toHaveLength(ids.length);
    expect(rolled.every((r) => r.n === 1)).toBe(true);

    // Visitors: 30 addresses, each page view sent to either replica; each kicks its own worker.
    const site = children[0];
    if (!site) throw new Error('no child');
    const visitors = Array.from({ length: 30 }, (_, n) => `17.253.201.${n + 1}`);
    await Promise.all(
      visitors.flatMap((ip, n) =>
        [0, 1].map((page) =>
          fetch(`${base(n + page)}/collect`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain', 'x-forwarded-for': ip, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0' },
            body: JSON.stringify({
              tracking_script_id: site.website.tracking_script_id,
              type: 'pageview',
              url: `https://${site.website.domain}/p${page}`,
              session_id: `s-${ip}`,
            }),
          }).then((r) => expect(r.status).toBe(202)),
        ),
      ),
    );
    await until(
      'every visitor identified',
      async () => {
        const [row] = await env.db<{
          n: number;
        }>`select count(*)::int as n from identifications where website_id = ${site.website.id} and status <> 'pending'`;
        return row?.n === visitors.length;
      },
      60_000,
    );
    await expectIdentifiedAndChargedOnce(site, visitors.length);

    // Events through either replica: each sends its first attempt; the other's sweep must not send it again.
    for (let i = 0; i < 20; i++) {
      const child = children[i % children.length];
      const res = await fetch(`${base(i)}/partner-update-child`, {
        method: 'POST',
        headers: { 'x-access-key': partner.key, 'content-type': 'application/json' },
        body: JSON.stringify({ child_api_key_id: child?.child.api_key_id, name: `renamed ${i}` }),
      });
      expect(res.status).toBe(200);
    }
    for (let i = 0; i < 2; i++) {
      const sweep = await fetch(`${base(i)}/sweep-webhook-deliveries`, { method: 'POST', headers: { authorization: `Bearer ${SWEEP_SECRET}` } });
      expect(sweep.status).toBe(200);
    }
    await until('every event delivered', async () => {
      const [row] = await env.db<{ n: number }>`select count(*)::int as n from events
        where partner_account_id = ${partner.account_id} and delivery_status not in ('delivered', 'no_destination')`;
      return row?.n === 0;
    });
    // (Visitor events go to the child's own webhook, which these children have none of.)
    const [sent] = await env.db<{ n: number }>`select count(*)::int as n from events
      where partner_account_id = ${partner.account_id} and delivery_status <> 'no_destination'`;
    // Every event the receiver got, whoever sent it: each exactly once (it answers 200 to all). The
    // rest of what it got is set-webhook's reachability probe.
    const bodies = receiver.received.filter((r) => r.headers['x-service-event']).map((r) => r.body);
    expect(new Set(bodies).size).toBe(bodies.length);
    expect(bodies.length).toBe(sent?.n);

    // The rate limit: one count in Redis, whichever replica answers.
    const limited = await seedPartner(env.deps, { name: 'Limited partner' });
    await clearOfWindowEnd(10_000);
    const statuses = await Promise.all(
      Array.from({ length: LIMIT + 20 }, (_, i) =>
        fetch(`${base(i)}/partner-list-children`, { headers: { 'x-access-key': limited.key } }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  }, 180_000);

  it('a replica killed with SIGKILL mid-identification batch, mid-delivery and mid-sweep loses nothing: the other finishes its work after the lease', async () => {
    if (replicas.length < 2) await startReplicas();
    const [a, b] = [0, 1].map((i) => `http://127.0.0.1:${replicas[i]?.port}/functions/v1`);
    // A receiver slow enough that a delivery is in flight when the sender dies.
    const slow = await startReceiver((_req, res) => setTimeout(() => res.end('ok'), 3_000));
    try {
      const partner = await seedPartner(env.deps, { name: 'Crash partner', quota: 10_000 });
      expect((await call(env, 'partner-set-webhook', { key: partner.key, body: { url: slow.url } })).status).toBe(200);
      const site = await createChildVia(env, partner.key, { monthly_id_quota: 100 });
      const other = await createChildVia(env, partner.key, { monthly_id_quota: 100 });
      const due = await createChildVia(env, partner.key, { monthly_id_quota: 100 });
      await env.settle();
      const probes = slow.received.length;

      // Hold two subscription rows: replica 0's worker claims the site's identifications, then waits
      // to charge them, mid-batch; its rollover sweep, which waits for rows it cannot skip on its
      // second pass, waits mid-sweep for the due child.
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked = () => {};
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const holder = env.db.begin(async (tx) => {
        await tx`select 1 from child_subscriptions where api_key_id = ${site.child.api_key_id} for update`;
        // A key-share lock: the period can still be ended (an update of no key column), but a
        // rollover's FOR UPDATE cannot have the row, so no replica rolls it before the kill.
        await tx`select 1 from child_subscriptions where api_key_id = ${due.child.api_key_id} for key share`;
        locked();
        await held;
      });
      await isLocked;
      await env.db`update child_subscriptions set current_period_start = now() - interval '31 days', current_period_end = now() - interval '1 day'
                   where api_key_id = ${due.child.api_key_id}`;

      const visitors = Array.from({ length: 12 }, (_, n) => `17.253.202.${n + 1}`);
      for (const ip of visitors) {
        const res = await fetch(`${a}/collect`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', 'x-forwarded-for': ip, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0' },
          body: JSON.stringify({
            tracking_script_id: site.website.tracking_script_id,
            type: 'pageview',
            url: `https://${site.website.domain}/`,
            session_id: `s-${ip}`,
          }),
        });
        expect(res.status).toBe(202);
      }
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${a}/partner-update-child`, {
          method: 'POST',
          headers: { 'x-access-key': partner.key, 'content-type': 'application/json' },
          // Another child: the held row would hold this request too.
          body: JSON.stringify({ child_api_key_id: other.child.api_key_id, name: `crash ${i}` }),
        });
        expect(res.status).toBe(200);
      }
      const leased = async () => {
        const [row] = await env.db<{ n: number }>`select count(*)::int as n from identifications
          where website_id = ${site.website.id} and status = 'pending' and lease_until > now()`;
        return row?.n ?? 0;
      };
      const sweepWaiting = async () => {
        const [row] = await env.db<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where application_name = 'replica-0' and wait_event_type = 'Lock' and query like '%sl_roll_over_children%'`;
        return (row?.n ?? 0) > 0;
      };
      await until(
        'identifications claimed, a delivery in flight and a rollover waiting',
        async () => (await leased()) > 0 && slow.received.length > probes && (await sweepWaiting()),
      );

      replicas[0]?.proc.kill('SIGKILL');
      // The kernel closes a killed process's sockets; a session waiting on a lock notices only when it
      // next writes to its client, so end replica 0's sessions as Postgres would then.
      await until('replica 0 gone', async () => replicas[0]?.proc.exitCode !== null || replicas[0]?.proc.signalCode !== null);
      await env.db`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'replica-0'`;
      release();
      await holder;

      // What replica 0 had claimed waits out its lease: nobody else touches it before then.
      expect(await leased()).toBeGreaterThan(0);

      // Then replica 1 finishes: its scheduler identifies, and its delivery sweep (called here every few
      // seconds rather than waiting for its one-minute timer) resends what was in flight.
      await until(
        'replica 1 finished replica 0’s work',
        async () => {
          await fetch(`${b}/sweep-webhook-deliveries`, { method: 'POST', headers: { authorization: `Bearer ${SWEEP_SECRET}` } });
          const [row] = await env.db<{ pending: number; undelivered: number }>`
            select (select count(*)::int from identifications where website_id = ${site.website.id} and status = 'pending') as pending,
                   (select count(*)::int from events where partner_account_id = ${partner.account_id} and delivery_status not in ('delivered', 'no_destination')) as undelivered`;
          return row?.pending === 0 && row?.undelivered === 0;
        },
        120_000,
      );
      await expectIdentifiedAndChargedOnce(site, visitors.length);
      // The period replica 0 was rolling when it died rolled once, by replica 1.
      await until('the due period rolled', async () => {
        const [row] = await env.db<{ n: number }>`select count(*)::int as n from child_subscriptions
          where api_key_id = ${due.child.api_key_id} and current_period_end > now()`;
        return row?.n === 1;
      });
      const [rolled] = await env.db<{ n: number }>`select count(*)::int as n from events
        where event = 'child.period_rolled' and child_api_key_id = ${due.child.api_key_id}`;
      expect(rolled?.n).toBe(1);
      // Every event reached the receiver; one in flight when its sender died may have arrived twice
      // (delivery is at least once: receivers de-duplicate by the event's id).
      const [events] = await env.db<{ n: number }>`select count(*)::int as n from events
        where partner_account_id = ${partner.account_id} and delivery_status = 'delivered'`;
      const bodies = slow.received.filter((r) => r.headers['x-service-event']).map((r) => r.body);
      expect(new Set(bodies).size).toBe(events?.n);
    } finally {
      await slow.close();
    }
  }, 180_000);
});
