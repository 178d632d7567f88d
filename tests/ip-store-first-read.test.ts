import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from './support/db.ts';
import { realIpDeps } from './support/ip.ts';

/**
 * A server loads its IP data in the background, seconds after it starts; the database being away
 * for a moment then (a restart, a failover) used to stop the server. The first read of the layers
 * is retried instead (tests/database-outage shows it over HTTP against a real cut).
 */
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t.drop();
});

/** The test database, whose first `failures` statements reading ip_ranges fail as a lost connection does. */
function flaky(failures: number) {
  let left = failures;
  return new Proxy(t.db, {
    apply(target, self, args: unknown[]) {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
      if (text.includes('from ip_ranges') && left > 0) {
        left--;
        return Promise.reject(Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' }));
      }
      return Reflect.apply(target, self, args);
    },
  });
}

describe('the IP data’s first read', () => {
  it('waits for a database that is away for a moment, then loads', async () => {
    const ip = await realIpDeps()(flaky(2));
    expect(ip.data().facts('17.253.0.1', () => null)).toMatchObject({ traffic_type: 'business' });
  });
});
