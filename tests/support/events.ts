import type { Sql } from '@sightline/core';

export interface StoredEvent {
  event: string;
  data: Record<string, unknown>;
  timestamp: string;
}

/** The outbox events of one child, oldest first (by the envelope timestamp, clock time). */
export async function eventsOf(db: Sql, childApiKeyId: string): Promise<StoredEvent[]> {
  const rows = await db<{ body: string }>`select body from events where child_api_key_id = ${childApiKeyId}`;
  return rows.map((r) => JSON.parse(r.body) as StoredEvent).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
}

export const names = (events: StoredEvent[]) => events.map((e) => e.event);
