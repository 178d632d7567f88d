import { AppError } from '@sightline/core';
import { openPglite, runOperatorCommand } from '@sightline/host';
import { describe, expect, it } from 'vitest';
import { createTestEnv } from './support/app.ts';

/**
 * On the embedded default the database runs on the server's own thread. A long operator command
 * (consume, an import) is a loop of queries; each must leave the event loop a turn, or every HTTP
 * request waits for the whole loop (measured before: /openapi.json took 1.3 s during a 3,000-ID
 * consume, and `--count 100000000` froze the server until it was killed).
 */
describe('embedded database work and the event loop', () => {
  it('a loop of PGlite queries lets timers and I/O run in between', async () => {
    const db = await openPglite(undefined);
    try {
      // Counts turns of the event loop (one per check phase), whatever the clock says.
      let turns = 0;
      let counting = true;
      const tick = () => {
        turns++;
        if (counting) setImmediate(tick);
      };
      setImmediate(tick);
      for (let i = 0; i < 300; i++) await db`select ${i}::int as n`;
      counting = false;
      // Without a turn per query the loop never reaches its check phase until the queries are done.
      expect(turns).toBeGreaterThanOrEqual(150);
    } finally {
      await db.close();
    }
  });

  it('consume is bounded: a count over 10,000 is a 400 that changes nothing', async () => {
    const env = await createTestEnv();
    try {
      const err = await runOperatorCommand(env.deps, 'consume', { 'key-id': crypto.randomUUID(), count: '10001' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
      expect((err as AppError).message).toMatch(/--count must be at most 10000/);
    } finally {
      await env.close();
    }
  });
});
