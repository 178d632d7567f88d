import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Definition, Migration, Schema } from '@sightline/core';

/**
 * The repository's `migrations/` folder: the versioned migrations (`NNNN_name.sql`, tables and data)
 * and, under `functions/<area>/<name>.sql`, every SQL function, trigger and view in its current form
 * (schema-definitions.ts). `npm run build:supabase` writes the same files, in the same order, to
 * supabase/migrations.
 */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(path.join(dir, name), 'utf8') })));
}

export async function loadDefinitions(dir = path.join(MIGRATIONS_DIR, 'functions')): Promise<Definition[]> {
  const files = (await readdir(dir, { recursive: true })).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(files.map(async (file) => ({ path: file.split(path.sep).join('/'), sql: await readFile(path.join(dir, file), 'utf8') })));
}

/** Everything `migrate` applies, read from `dir`. */
export async function loadSchema(dir = MIGRATIONS_DIR): Promise<Schema> {
  return { migrations: await loadMigrations(dir), definitions: await loadDefinitions(path.join(dir, 'functions')) };
}
