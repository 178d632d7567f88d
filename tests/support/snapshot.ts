import type { Database, Sql } from '@sightline/core';
import { allFunctions } from '../../functions/index.ts';

/** Row counts and a content digest of every ledger table: proof that a request changed nothing. */
export async function snapshot(db: Sql): Promise<Record<string, string>> {
  const rows = await db<{ t: string; n: number; d: string }>`
    select 'accounts' as t, count(*)::int as n, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) as d from accounts x
    union all select 'api_keys', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from api_keys x
    union all select 'websites', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from websites x
    union all select 'pools', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from pools x
    union all select 'child_subscriptions', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from child_subscriptions x
    union all select 'topups', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from topups x
    union all select 'invoices', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from invoices x
    union all select 'events', count(*)::int, md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from events x`;
  return Object.fromEntries(rows.map((r) => [r.t, `${r.n}:${r.d}`]));
}

/**
 * What a request changed in the database, for a suite that cannot name in advance what a request
 * might touch (the fuzz suite). A row trigger on every table adds one to a counter in the writer's
 * own transaction, so a write rolled back is no write, and reading the counter costs one row. Tables
 * in `byContent` are compared by their rows instead: a step that writes and then undoes its write in
 * a later transaction (an idempotency key taken and given back) leaves them as they were. `ignore`
 * names rows a refused request may rightly write, per table, as a column and the values it may hold.
 * It installs into the suite's own throwaway database (the `Sql` port has no dynamic SQL, so the
 * triggers are made by a function there). Two equal readings: nothing changed in between.
 */
export async function changeProbe(
  db: Database,
  opts: { ignore?: Record<string, { column: string; values: string[] }>; byContent?: string[] } = {},
): Promise<() => Promise<string>> {
  await db.exec(`
    create table if not exists test_writes (n bigint not null);
    insert into test_writes select 0 where not exists (select from test_writes);
    create or replace function test_count_write() returns trigger language plpgsql as $fn$
    begin
      -- TG_ARGV: the column to look at, then the values whose rows are not counted.
      if TG_NARGS > 0 and to_jsonb(coalesce(NEW, OLD)) ->> TG_ARGV[0] = any(TG_ARGV[1:]) then
        return null;
      end if;
      update test_writes set n = n + 1;
      return null;
    end $fn$;
    create or replace function test_count_writes(p_ignore jsonb, p_by_content text[]) returns void language plpgsql as $fn$
    declare r record; args text;
    begin
      -- Plain tables and partitioned parents: a partition takes its parent's trigger (tracker_events, 0035).
      for r in select c.relname::text as name from pg_class c join pg_namespace s on s.oid = c.relnamespace
               where s.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
                 and c.relname <> 'test_writes' and c.relname <> all (p_by_content) loop
        select string_agg(quote_literal(a), ', ') into args
        from (select p_ignore -> r.name ->> 'column' as a
              union all select jsonb_array_elements_text(p_ignore -> r.name -> 'values')) v where a is not null;
        execute format('drop trigger if exists test_count_write on %I', r.name);
        execute format('create trigger test_count_write after insert or update or delete on %I for each row execute function test_count_write(%s)',
                       r.name, coalesce(args, ''));
      end loop;
    end $fn$;
    create or replace function test_change_reading(p_by_content text[]) returns text language plpgsql as $fn$
    declare t text; d text; out text;
    begin
      select n::text into out from test_writes;
      foreach t in array p_by_content loop
        execute format($q$select md5(coalesce(string_agg(to_jsonb(x)::text, ',' order by to_jsonb(x)::text), '')) from %I x$q$, t) into d;
        out := out || ' ' || t || ':' || d;
      end loop;
      return out;
    end $fn$`);
  const byContent = `{${(opts.byContent ?? []).join(',')}}`;
  await db`select test_count_writes(${JSON.stringify(opts.ignore ?? {})}::text::jsonb, ${byContent}::text[])`;
  return async () => {
    const [row] = await db<{ reading: string }>`select test_change_reading(${byContent}::text[]) as reading`;
    return row?.reading ?? '';
  };
}

/**
 * The probe for "a refused request changes nothing": what a refusal may rightly leave behind is
 * the call count every authenticated call adds, answered or refused (docs/decisions/account.md,
 * "Usage is counted in memory, written in batches"),
 * and an idempotency key it took and gave back (compared by content, so taken-and-returned is no
 * change). Anything else written is a change.
 */
export function refusalProbe(db: Database): Promise<() => Promise<string>> {
  const perCall = ['api_call', ...allFunctions.flatMap((f) => (f.meteredAs ? [f.meteredAs] : []))];
  return changeProbe(db, { ignore: { usage_daily: { column: 'operation', values: perCall } }, byContent: ['idempotent_requests'] });
}
