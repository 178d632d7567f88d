/**
 * What every alert and CRM push is made from: one signal about one identified visitor, already read
 * from the database by the caller (the outbox row's body). The adapters only format and send it.
 */

export type SignalKind = 'visitor_identified' | 'visitor_returned' | 'high_intent' | 'icp_qualified' | 'watched_visit';

export interface SignalMessage {
  signal: SignalKind;
  /** ISO 8601. */
  occurred_at: string;
  website: { id: string; domain: string };
  visitor: {
    id: string;
    company_name: string | null;
    domain: string | null;
    country_code: string | null;
    pages: string[];
    page_count: number;
    active_ms: number;
    first_seen: string;
    last_seen: string;
    high_intent: boolean;
  };
  icp: { name: string; score: number } | null;
  /** A link to the visitor in the console, when the console has a public address. */
  console_url: string | null;
}
