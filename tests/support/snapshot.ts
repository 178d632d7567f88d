import type { Sql } from '@sightline/core';

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
