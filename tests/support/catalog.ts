import type { Database } from '@sightline/core';

/**
 * What a schema is, read from the catalogs of the current schema, each line printed by Postgres
 * itself (pg_get_functiondef, pg_get_viewdef, pg_get_triggerdef, pg_get_constraintdef,
 * pg_get_indexdef), sorted: two databases with equal catalogs have the same tables, columns,
 * constraints, indexes, types, functions (name, arguments, result, body, settings), views and
 * triggers. Extension members are left out (pg_trgm's functions); so are the tables named in `skip`.
 */
export async function catalogOf(db: Database, skip: string[] = []): Promise<Record<string, string[]>> {
  const skipped = JSON.stringify(skip);
  const lines = async (q: Promise<{ line: string }[]>) => (await q).map((r) => r.line).sort();
  return {
    extensions: await lines(db<{ line: string }>`select extname as line from pg_extension`),
    functions: await lines(db<{ line: string }>`
      select pg_get_functiondef(p.oid) as line from pg_proc p
      where p.pronamespace = current_schema()::regnamespace
        and not exists (select 1 from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e')`),
    views: await lines(db<{ line: string }>`
      select viewname || ': ' || definition as line from pg_views where schemaname = current_schema()`),
    triggers: await lines(db<{ line: string }>`
      select pg_get_triggerdef(t.oid) as line from pg_trigger t join pg_class c on c.oid = t.tgrelid
      where c.relnamespace = current_schema()::regnamespace and not t.tgisinternal
        and c.relname not in (select jsonb_array_elements_text(${skipped}::text::jsonb))`),
    columns: await lines(db<{ line: string }>`
      select c.relname || '.' || a.attname || ' #' || row_number() over (partition by c.oid order by a.attnum) || ' '
             || format_type(a.atttypid, a.atttypmod) || case when a.attnotnull then ' not null' else '' end
             || ' ' || a.attgenerated::text || a.attidentity::text || coalesce(' ' || pg_get_expr(d.adbin, d.adrelid), '') as line
      from pg_attribute a join pg_class c on c.oid = a.attrelid
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v', 'c')
        and a.attnum > 0 and not a.attisdropped
        and c.relname not in (select jsonb_array_elements_text(${skipped}::text::jsonb))`),
    constraints: await lines(db<{ line: string }>`
      select coalesce(c.relname, t.typname) || ' ' || k.conname || ': ' || pg_get_constraintdef(k.oid) as line
      from pg_constraint k left join pg_class c on c.oid = k.conrelid left join pg_type t on t.oid = k.contypid
      where k.connamespace = current_schema()::regnamespace
        and coalesce(c.relname, '') not in (select jsonb_array_elements_text(${skipped}::text::jsonb))`),
    indexes: await lines(db<{ line: string }>`
      select indexdef as line from pg_indexes where schemaname = current_schema()
        and tablename not in (select jsonb_array_elements_text(${skipped}::text::jsonb))`),
    types: await lines(db<{ line: string }>`
      select t.typname || ' ' || t.typtype::text as line from pg_type t left join pg_class c on c.oid = t.typrelid
      where t.typnamespace = current_schema()::regnamespace and (t.typtype in ('e', 'd') or (t.typtype = 'c' and c.relkind = 'c'))`),
    sequences: await lines(db<{ line: string }>`
      select sequencename || ' ' || data_type::text || ' ' || increment_by || ' ' || coalesce(cycle::text, '') as line
      from pg_sequences where schemaname = current_schema()`),
  };
}
