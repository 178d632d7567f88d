import type { Sql } from '../kernel/sql.ts';

/**
 * The repeatable half of the schema (Flyway's repeatable migrations): every SQL function, trigger
 * function (with its triggers) and view lives once, in its current form, in a file of
 * migrations/functions/<area>/<name>.sql, and is re-applied after the versioned migrations whenever
 * its text changes. Tables, columns, indexes and data changes stay in the append-only migrations.
 *
 * What the runner owns: every function named `sl_*` in the current schema (one that no file defines
 * any more is dropped), and the views and triggers the files define. A file's bodies are not
 * checked when it is applied (check_function_bodies = off, as pg_dump restores), so the files need no
 * order among themselves; a view comes after the files defining what it calls, and anything naming
 * a view after that view.
 */
export interface Definition {
  /** Path below migrations/functions/, e.g. `tracker/sl_list_visitors.sql`. */
  path: string;
  sql: string;
}

/** The objects one file creates, read from its text (every `create [or replace] function|view|trigger`). */
export interface DefinedObjects {
  functions: string[];
  views: string[];
  triggers: { name: string; table: string }[];
}

const CREATE = /^\s*create\s+(?:or\s+replace\s+)?(function|view|trigger)\s+(?:public\.)?(\w+)([\s\S]*?)(?=^\s*create\s|$(?![\s\S]))/gim;

function withoutComments(sql: string): string {
  return sql.replace(/\/\*[\s\S]*?\*\//g, '').replace(/--[^\n]*/g, '');
}

export function definedObjects(sql: string): DefinedObjects {
  const found: DefinedObjects = { functions: [], views: [], triggers: [] };
  for (const m of withoutComments(sql).matchAll(CREATE)) {
    const [, kind = '', name = '', rest = ''] = m;
    if (kind.toLowerCase() === 'function') found.functions.push(name);
    else if (kind.toLowerCase() === 'view') found.views.push(name);
    else {
      const table = /\bon\s+(?:public\.)?(\w+)/i.exec(rest)?.[1];
      if (!table) throw new Error(`trigger ${name}: no table found after its name`);
      found.triggers.push({ name, table });
    }
  }
  return found;
}

/** Names every object a file creates, so that another file's text can be searched for them. */
function namesOf(o: DefinedObjects): string[] {
  return [...o.functions, ...o.views, ...o.triggers.map((t) => t.name)];
}

function mentions(sql: string, name: string): boolean {
  return new RegExp(`\\b${name}\\b`).test(withoutComments(sql));
}

/**
 * The order in which the files are applied: by path, except that a view comes after the files
 * defining a function it mentions, and a file mentioning a view after the view (a function may
 * return a view's rows). Function bodies are not checked on creation, so functions need no order.
 */
export function definitionOrder(defs: readonly Definition[]): Definition[] {
  const sorted = [...defs].sort((a, b) => a.path.localeCompare(b.path));
  const objects = new Map(sorted.map((d) => [d.path, definedObjects(d.sql)] as const));
  const viewFiles = sorted.filter((d) => (objects.get(d.path)?.views.length ?? 0) > 0);
  const needs = new Map<string, Set<string>>();
  for (const d of sorted) {
    const own = objects.get(d.path);
    const deps = new Set<string>();
    for (const v of viewFiles) {
      if (v.path !== d.path && (objects.get(v.path)?.views ?? []).some((name) => mentions(d.sql, name))) deps.add(v.path);
    }
    if (own && own.views.length > 0) {
      for (const other of sorted) {
        const names = objects.get(other.path)?.functions ?? [];
        if (other.path !== d.path && names.some((name) => mentions(d.sql, name))) deps.add(other.path);
      }
    }
    needs.set(d.path, deps);
  }
  const done = new Set<string>();
  const out: Definition[] = [];
  while (out.length < sorted.length) {
    const next = sorted.find((d) => !done.has(d.path) && [...(needs.get(d.path) ?? [])].every((p) => done.has(p)));
    if (!next)
      throw new Error(`migrations/functions: views depend on each other in a circle: ${sorted.filter((d) => !done.has(d.path)).map((d) => d.path)}`);
    done.add(next.path);
    out.push(next);
  }
  return out;
}

export async function checksumOf(sql: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(sql));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The definition files a migration needs before it runs (a CHECK or generated column that calls a function). */
export function requiredDefinitions(migrationSql: string): string[] {
  return [...migrationSql.matchAll(/^-- requires: functions\/(\S+)\s*$/gm)].map((m) => m[1] ?? '');
}

// Identifiers are spliced into DDL (it takes no parameters): they come from the catalog's own
// regprocedure text or from \w+ names read out of our files, and are quoted here.
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

type Tx = Sql & { exec(script: string): Promise<void> };

interface Record_ {
  path: string;
  checksum: string;
  objects: string;
}

/**
 * Drops the functions named `names` (every overload), the views and the triggers. A function that a
 * table needs (a CHECK, a generated column, a default or an index calls it) is kept: dropping it
 * would take the column or constraint with it, so its file is re-applied over it with `create or
 * replace` (a change to its signature needs a versioned migration). Everything else goes with
 * CASCADE; what the cascade takes from other files (a view calling a function) is re-applied
 * because its objects are then missing.
 */
async function dropObjects(tx: Tx, objects: DefinedObjects): Promise<void> {
  for (const t of objects.triggers) await tx.exec(`drop trigger if exists ${ident(t.name)} on ${ident(t.table)}`);
  for (const v of objects.views) await tx.exec(`drop view if exists ${ident(v)} cascade`);
  if (objects.functions.length === 0) return;
  const procs = await tx<{ proname: string; ident: string; pinned: boolean }>`
    select p.proname, p.oid::regprocedure::text as ident,
           exists (select 1 from pg_depend d
                   where d.refclassid = 'pg_proc'::regclass and d.refobjid = p.oid
                     and d.classid in ('pg_attrdef'::regclass, 'pg_constraint'::regclass, 'pg_class'::regclass)) as pinned
    from pg_proc p
    where p.pronamespace = current_schema()::regnamespace
      and not exists (select 1 from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e')`;
  const wanted = new Set(objects.functions);
  for (const p of procs) {
    if (wanted.has(p.proname) && !p.pinned) await tx.exec(`drop function if exists ${p.ident} cascade`);
  }
}

/** The SQL a Supabase deploy runs before re-creating every definition: drops what the runner would (see dropObjects). */
export function dropAllDefinitionsSql(defs: readonly Definition[]): string {
  const objects = defs.map((d) => definedObjects(d.sql));
  const lines = [
    ...objects.flatMap((o) => o.triggers.map((t) => `drop trigger if exists ${ident(t.name)} on ${ident(t.table)};`)),
    ...objects.flatMap((o) => o.views.map((v) => `drop view if exists ${ident(v)} cascade;`)),
    `do $$
declare
  f regprocedure;
begin
  for f in
    select p.oid::regprocedure from pg_proc p
    where p.pronamespace = current_schema()::regnamespace and p.proname like 'sl\\_%'
      and not exists (select 1 from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e')
      and not exists (select 1 from pg_depend d
                      where d.refclassid = 'pg_proc'::regclass and d.refobjid = p.oid
                        and d.classid in ('pg_attrdef'::regclass, 'pg_constraint'::regclass, 'pg_class'::regclass))
  loop
    execute format('drop function if exists %s cascade', f);
  end loop;
end
$$;`,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Applies one definition file: drops what it defined before (recorded, or, for a database built
 * before the file existed, the objects its text names) and runs it, recording its checksum and
 * objects.
 */
async function applyDefinition(tx: Tx, def: Definition, recorded: Record_ | undefined): Promise<void> {
  const now = definedObjects(def.sql);
  const before = recorded ? (JSON.parse(recorded.objects) as DefinedObjects) : now;
  await dropObjects(tx, {
    functions: [...new Set([...before.functions, ...now.functions])],
    views: [...new Set([...before.views, ...now.views])],
    triggers: [...before.triggers, ...now.triggers.filter((t) => !before.triggers.some((b) => b.name === t.name && b.table === t.table))],
  });
  await tx.exec(def.sql);
  const checksum = await checksumOf(def.sql);
  const objects = JSON.stringify(now);
  await tx`
    insert into schema_definitions (path, checksum, objects) values (${def.path}, ${checksum}, ${objects})
    on conflict (path) do update set checksum = excluded.checksum, objects = excluded.objects, applied_at = now()`;
}

export const CREATE_DEFINITIONS_TABLE = `create table if not exists schema_definitions (
    path text primary key, checksum text not null, objects text not null, applied_at timestamptz not null default now())`;

/** The runner's view of one transaction: what is recorded, and applying a file when its text changed. */
export async function definitionRunner(tx: Tx, defs: readonly Definition[]) {
  await tx.exec('set local check_function_bodies = off');
  const records = new Map((await tx<Record_>`select path, checksum, objects from schema_definitions`).map((r) => [r.path, r] as const));
  const byPath = new Map(defs.map((d) => [d.path, d] as const));
  const applied: string[] = [];

  /** Applies `path` unless the database has its current text. */
  async function ensure(path: string): Promise<void> {
    const def = byPath.get(path);
    if (!def) throw new Error(`a migration requires functions/${path}, which does not exist`);
    const record = records.get(path);
    if (record && record.checksum === (await checksumOf(def.sql))) return;
    await applyDefinition(tx, def, record);
    records.set(path, { path, checksum: await checksumOf(def.sql), objects: JSON.stringify(definedObjects(def.sql)) });
    applied.push(`functions/${path}`);
  }

  /**
   * After the versioned migrations: drops the objects of removed files and the `sl_` functions no
   * file defines, then applies every file whose text changed or whose objects are missing (a
   * cascade took them), in definitionOrder. Returns every file applied in this transaction,
   * those a migration required included.
   */
  async function sync(): Promise<string[]> {
    for (const r of records.values()) {
      if (byPath.has(r.path)) continue;
      await dropObjects(tx, JSON.parse(r.objects) as DefinedObjects);
      await tx`delete from schema_definitions where path = ${r.path}`;
      records.delete(r.path);
      applied.push(`functions/${r.path} (removed)`);
    }
    const owned = new Set(defs.flatMap((d) => definedObjects(d.sql).functions));
    const strays = await tx<{ proname: string }>`
      select distinct p.proname from pg_proc p
      where p.pronamespace = current_schema()::regnamespace and p.proname like 'sl\\_%'
        and not exists (select 1 from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e')`;
    const orphans = strays.map((s) => s.proname).filter((name) => !owned.has(name));
    if (orphans.length > 0) await dropObjects(tx, { functions: orphans, views: [], triggers: [] });

    const order = definitionOrder(defs);
    for (const def of order) {
      const record = records.get(def.path);
      if (!record || record.checksum !== (await checksumOf(def.sql))) await ensure(def.path);
    }
    // A file's objects may be gone although its text did not change: a CASCADE above took a view
    // or trigger that calls a function another file re-created. Re-applying one may cascade again,
    // so this repeats until every file's objects are there (each round applies at least one file).
    for (let round = 0; round <= order.length; round++) {
      const present = await presentObjects(tx);
      const missing = order.filter((def) => !namesOf(definedObjects(def.sql)).every((name) => present.has(name)));
      if (missing.length === 0) return applied;
      for (const def of missing) {
        records.delete(def.path);
        await ensure(def.path);
      }
    }
    throw new Error('migrations/functions: re-applying the files keeps dropping objects of others');
  }

  return { ensure, sync };
}

/** The names of the functions, views and triggers of the current schema. */
async function presentObjects(tx: Tx): Promise<Set<string>> {
  const rows = await tx<{ name: string }>`
    select proname as name from pg_proc where pronamespace = current_schema()::regnamespace
    union select viewname from pg_views where schemaname = current_schema()
    union select t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = current_schema()::regnamespace and not t.tgisinternal`;
  return new Set(rows.map((r) => r.name));
}
