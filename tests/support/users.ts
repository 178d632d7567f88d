import type { Sql } from '@sightline/core';

let counter = 0;

/**
 * A user connected to `accountId`, for suites about what connected users do (ICPs, messages,
 * account endpoints). The connect-link flow itself is proved in its own suite; this writes the row
 * that flow writes, so those suites do not depend on it.
 */
export async function seedConnectedUser(db: Sql, accountId: string, opts: { name?: string; title?: string; company?: string } = {}) {
  const slug = `test-user-${process.pid}-${Date.now().toString(36)}-${++counter}`;
  const [row] = await db<{ id: string }>`
    insert into connected_users (account_id, name, linkedin_url, title, company)
    values (${accountId}, ${opts.name ?? 'Test Sender'}, ${`https://www.linkedin.com/in/${slug}`}, ${opts.title ?? 'Head of Sales'}, ${opts.company ?? 'Sightline Test Ltd'})
    returning id`;
  if (!row) throw new Error('no connected user inserted');
  return { user_id: row.id, linkedin_url: `https://www.linkedin.com/in/${slug}` };
}

/** The headers of a connected-user call (`x-idempotency-key` only when given). */
export const userHeaders = (userId: string, idempotencyKey?: string): Record<string, string> => ({
  'x-user-id': userId,
  ...(idempotencyKey ? { 'x-idempotency-key': idempotencyKey } : {}),
});
