import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Definition, definedObjects, migrate, type Schema } from '@sightline/core';
import { loadSchema, MIGRATIONS_DIR } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogOf } from './support/catalog.ts';
import { openTestDatabase, type TestDatabase } from './support/db.ts';
import { oldWayMigrations } from './support/history.ts';

/**
 * Every SQL function, trigger and view is defined once, in its current form, in
 * migrations/functions/<area>/<name>.sql, and re-applied when its text changes
 * (packages/core/src/schema-definitions.ts).
 */
let fresh: TestDatabase;
beforeAll(async () => {
  fresh = await openTestDatabase();
});
afterAll(() => fresh.drop());

async function sqlFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.sql')).map((f) => path.join(dir, f));
}

describe('each SQL function has one home', () => {
  it('each function, trigger and view is defined in exactly one file of migrations/, named for it, under functions/', async () => {
    const homes = new Map<string, string[]>();
    for (const file of await sqlFiles(MIGRATIONS_DIR)) {
      const o = definedObjects(await readFile(file, 'utf8'));
      for (const name of [...o.functions, ...o.views, ...o.triggers.map((t) => `trigger ${t.name} on ${t.table}`)]) {
        homes.set(name, [...(homes.get(name) ?? []), path.relative(MIGRATIONS_DIR, file)]);
      }
    }
    const misplaced = [...homes].filter(([name, files]) => {
      if (files.length !== 1) return true;
      const [file = ''] = files;
      if (!file.startsWith('functions/')) return true;
      return !name.startsWith('trigger ') && path.basename(file, '.sql') !== name;
    });
    expect(misplaced).toEqual([]);
    expect(homes.size).toBeGreaterThan(90);
  });

  it('every function, view and trigger of a migrated database comes from a file', async () => {
    const defined = (await loadSchema()).definitions ?? [];
    const names = new Set(
      defined.flatMap((d) => {
        const o = definedObjects(d.sql);
        return [...o.functions, ...o.views, ...o.triggers.map((t) => t.name)];
      }),
    );
    const catalog = await fresh.db<{ name: string }>`
      select p.proname as name from pg_proc p
      where p.pronamespace = current_schema()::regnamespace
        and not exists (select 1 from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e')
      union select viewname from pg_views where schemaname = current_schema()
      union select t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
      where c.relnamespace = current_schema()::regnamespace and not t.tgisinternal`;
    expect(catalog.map((r) => r.name).filter((n) => !names.has(n))).toEqual([]);
  });
});

/**
 * Functions whose text differs from the old way's on purpose: sl_credit_topup and
 * sl_transfer_topup ran the same statements to add to a child's top-up; they now both call
 * sl_add_child_topup. sl_charge_lookup answers a result the account holds unexpired without a
 * second charge; sl_collect_events looks for a retried beacon in the day before (0035's per-day
 * index); sl_list_visitors counts its total from hourly counts (0034). After the upgrade the whole
 * catalog is equal.
 */
const CHANGED_SINCE_OLD_WAY = [
  'sl_add_child_topup',
  'sl_credit_topup',
  'sl_transfer_topup',
  'sl_charge_lookup',
  'sl_collect_events',
  'sl_list_visitors',
  // Sessions record the day they opened (0037); a settle batch points its visitors in one statement.
  'sl_fold_tracker_events',
  'sl_settle_identifications',
  'sl_settle_locked_identification',
  // Traffic rules (0039): aggregation marks excluded events and queues an excluded identification again.
  'sl_apply_tracker_events',
  // Integrations (0040): deliveries in the webhook outbox, Retry-After and permanent failures recorded.
  'sl_claim_deliveries',
  'sl_emit',
  'sl_event_has_destination',
  'sl_record_deliveries',
  'sl_replay_event',
  // visitor_returned (0040): the quiet period is an account setting.
  'sl_update_account_settings',
  // A consumption's unlocked read is the view sl_child_funding, shared with sl_consume_ids.
  'sl_consume_id',
  // collect's status reads check each distinct site of a batch once; the host check is PL/pgSQL, planned once a session.
  'sl_tracker_visitor_status',
  'sl_tracker_accepts_host',
];
/** Views changed since, with the tables under them (0035 partitioned tracker_events by received_on). */
const VIEWS_CHANGED_SINCE_OLD_WAY = ['tracker_filtered_beacons'];

describe.skipIf(!(await oldWayMigrations()))('a database migrated the old way', () => {
  it('has the catalog of a database built fresh, and keeps it once the runner has upgraded it', async () => {
    const old = await openTestDatabase({ before: '9999' });
    try {
      // The files hold each object exactly as the last of the old migrations left it, but for the
      // functions changed on purpose since (the same statements, written once).
      const runnerOwn = ['schema_definitions'];
      // Tables the versioned migrations added after the old way are not in a database migrated then:
      // the first comparison leaves them out; the upgrade below adds them, and then all is equal.
      const oldNames = new Set(((await oldWayMigrations()) ?? []).map((m) => m.name));
      const newerSql = (await loadSchema()).migrations.filter((m) => !oldNames.has(m.name)).map((m) => m.sql);
      const newer = newerSql.flatMap((sql) =>
        [...sql.matchAll(/create table (?:if not exists )?([a-z_]+)/gi)].map((t) => (t[1] as string).toLowerCase()),
      );
      // Tables a newer migration changed (columns, indexes, partitions) are compared after the upgrade only.
      const changed = newerSql.flatMap((sql) =>
        [...sql.matchAll(/(?:alter table (?:if exists )?(?:only )?|create (?:unique )?index \w+ on )([a-z_]+)/gi)].map((t) =>
          (t[1] as string).toLowerCase(),
        ),
      );
      const partitions = (await fresh.db<{ name: string }>`select relname as name from pg_class where relispartition`).map((r) => r.name);
      const newSequences = newerSql.flatMap((sql) => [...sql.matchAll(/create sequence ([a-z_]+)/gi)].map((t) => (t[1] as string).toLowerCase()));
      // Functions that did not exist then (a file added since) have nothing to compare with.
      const oldFunctions = new Set(
        (await old.db<{ name: string }>`select proname as name from pg_proc where pronamespace = current_schema()::regnamespace`).map((r) => r.name),
      );
      // Views that did not exist then either.
      const oldViews = new Set(
        (await old.db<{ name: string }>`select viewname as name from pg_views where schemaname = current_schema()`).map((r) => r.name),
      );
      const newViews = (await fresh.db<{ name: string }>`select viewname as name from pg_views where schemaname = current_schema()`)
        .map((r) => r.name)
        .filter((name) => !oldViews.has(name));
      const functionName = (def: string) => /^CREATE OR REPLACE FUNCTION public\.([a-z_0-9]+)\(/.exec(def)?.[1] ?? '';
      const unchanged = (c: Record<string, string[]>) => ({
        ...c,
        functions: c.functions?.filter((f) => oldFunctions.has(functionName(f)) && !CHANGED_SINCE_OLD_WAY.includes(functionName(f))),
        views: c.views?.filter(
          (v) => !newViews.some((name) => v.startsWith(`${name}:`)) && !VIEWS_CHANGED_SINCE_OLD_WAY.some((name) => v.startsWith(`${name}:`)),
        ),
        sequences: c.sequences?.filter(
          (q) => !newSequences.some((name) => q.startsWith(`${name} `)) && !changed.some((table) => q.startsWith(`${table}_id_seq `)),
        ),
      });
      expect(unchanged(await catalogOf(old.db, [...runnerOwn, ...changed]))).toEqual(
        unchanged(await catalogOf(fresh.db, [...runnerOwn, ...newer, ...changed, ...partitions, ...newViews])),
      );
      expect(await migrate(old.db, await loadSchema())).not.toEqual([]);
      expect(await catalogOf(old.db)).toEqual(await catalogOf(fresh.db));
      // And the runner has nothing left to do there.
      expect(await migrate(old.db, await loadSchema())).toEqual([]);
    } finally {
      await old.drop();
    }
  }, 120_000);
});

describe('the runner re-applies a file when its text changes', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase();
  });
  afterAll(() => t.drop());

  const schemaWith = async (change: (defs: Definition[]) => Definition[]): Promise<Schema> => {
    const schema = await loadSchema();
    return { ...schema, definitions: change(schema.definitions ?? []) };
  };
  const replaced = (defs: Definition[], file: string, sql: (old: string) => string) =>
    defs.map((d) => (d.path === file ? { ...d, sql: sql(d.sql) } : d));
  const overloads = async (name: string) =>
    (
      await t.db<{ ident: string; result: string }>`
        select p.oid::regprocedure::text as ident, pg_get_function_result(p.oid) as result
        from pg_proc p where p.proname = ${name} and p.pronamespace = current_schema()::regnamespace`
    ).map((r) => `${r.ident} -> ${r.result}`);

  it('a new signature and result replace the old function (no stale overload), and only that file is applied', async () => {
    const changed = await schemaWith((defs) =>
      replaced(defs, 'common/sl_iso.sql', (sql) =>
        sql.replace('sl_iso(ts timestamptz) returns text', 'sl_iso(ts timestamptz, p_unused integer default 0) returns varchar'),
      ),
    );
    expect(await migrate(t.db, changed)).toEqual(['functions/common/sl_iso.sql']);
    expect(await overloads('sl_iso')).toEqual(['sl_iso(timestamp with time zone,integer) -> character varying']);
    // And back: the file's current text wins again.
    expect(await migrate(t.db, await loadSchema())).toEqual(['functions/common/sl_iso.sql']);
    expect(await overloads('sl_iso')).toEqual(['sl_iso(timestamp with time zone) -> text']);
  });

  it("a removed file's functions are dropped, and come back with the file", async () => {
    const without = await schemaWith((defs) => defs.filter((d) => d.path !== 'ledger/sl_partner_of.sql'));
    expect(await migrate(t.db, without)).toEqual(['functions/ledger/sl_partner_of.sql (removed)']);
    expect(await overloads('sl_partner_of')).toEqual([]);
    expect(await migrate(t.db, await loadSchema())).toEqual(['functions/ledger/sl_partner_of.sql']);
    expect(await overloads('sl_partner_of')).toEqual(['sl_partner_of(uuid) -> uuid']);
  });

  it('a view calling a function that is re-created survives: the cascade takes it and its file is applied again', async () => {
    const withView = await schemaWith((defs) => [
      ...defs,
      {
        path: 'test/sl_test_double.sql',
        sql: 'create function sl_test_double(p integer) returns integer\nlanguage sql immutable as $$ select 2 * p $$;\n',
      },
      { path: 'test/test_doubles.sql', sql: 'create view test_doubles as select sl_test_double(g) as d from generate_series(1, 3) g;\n' },
    ]);
    await migrate(t.db, withView);
    const changed: Schema = {
      ...withView,
      definitions: replaced(withView.definitions ?? [], 'test/sl_test_double.sql', (sql) => sql.replace('2 * p', 'p + p + 0')),
    };
    expect(await migrate(t.db, changed)).toEqual(['functions/test/sl_test_double.sql', 'functions/test/test_doubles.sql']);
    expect(await t.db<{ d: number }>`select d from test_doubles order by d`).toEqual([{ d: 2 }, { d: 4 }, { d: 6 }]);
    await migrate(t.db, await loadSchema());
    expect(await t.db`select 1 from pg_views where viewname = 'test_doubles'`).toEqual([]);
  });

  it('a function a generated column calls is replaced in place, never dropped with the column', async () => {
    const changed = await schemaWith((defs) =>
      replaced(defs, 'tracker/sl_identification_unit.sql', (sql) => sql.replace('else p_ip end', 'else p_ip  end')),
    );
    expect(await migrate(t.db, changed)).toEqual(['functions/tracker/sl_identification_unit.sql']);
    const [unit] = await t.db<{ n: number }>`
      select count(*)::int as n from information_schema.columns where table_name = 'identifications' and column_name = 'unit'`;
    expect(unit?.n).toBe(1);
    const [src] = await t.db<{ body: string }>`select prosrc as body from pg_proc where proname = 'sl_identification_unit'`;
    expect(src?.body).toContain('else p_ip  end');
    await migrate(t.db, await loadSchema());
  });
});
