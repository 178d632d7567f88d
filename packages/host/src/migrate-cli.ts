import { parseEnv } from '@sightline/core';
import { migrateDatabase, openDatabase } from './deps.ts';
import { readLiveRuntimeFile } from './runtime-file.ts';

/** `npm run migrate`: applies pending migrations to DATABASE_URL or the embedded data directory. */
async function main() {
  const env = parseEnv(process.env);
  if (!env.DATABASE_URL && (await readLiveRuntimeFile(env.DATA_DIR))) {
    process.stdout.write('the embedded server is running and applied migrations when it started\n');
    return;
  }
  const db = await openDatabase(env);
  try {
    const applied = await migrateDatabase(db);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`migrate: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
