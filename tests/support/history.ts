import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Migration } from '@sightline/core';

const run = promisify(execFile);

/**
 * The last commit at which the versioned migrations still held every function, trigger and view
 * (0001–0032, before migrations/functions/ existed). A database migrated from them is a database
 * "migrated the old way"; it is read from git history, so that no SQL is kept twice in the tree.
 */
export const OLD_WAY_COMMIT = '3ccb54105a536ed208fdfd42403aa887c14fd3cb';

const REPO = new URL('../../', import.meta.url).pathname;

let cached: Promise<Migration[] | undefined> | undefined;

/** The 32 migrations as they were at OLD_WAY_COMMIT, or undefined where git or that commit is not at hand (a shallow clone). */
export function oldWayMigrations(): Promise<Migration[] | undefined> {
  cached ??= (async () => {
    try {
      const { stdout } = await run('git', ['-C', REPO, 'ls-tree', '--name-only', OLD_WAY_COMMIT, 'migrations/']);
      const names = stdout.split('\n').filter((n) => n.endsWith('.sql'));
      return await Promise.all(
        names.map(async (file) => ({
          name: file.slice('migrations/'.length),
          sql: (await run('git', ['-C', REPO, 'show', `${OLD_WAY_COMMIT}:${file}`], { maxBuffer: 1 << 24 })).stdout,
        })),
      );
    } catch {
      return undefined;
    }
  })();
  return cached;
}
