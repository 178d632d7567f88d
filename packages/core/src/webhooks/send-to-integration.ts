import {
  type DeliveryOutcome,
  postToChatWebhook,
  pushToHubSpot,
  pushToPipedrive,
  type Send,
  type SignalKind,
  type SignalMessage,
  slackDigest,
  slackMessage,
  teamsDigest,
  teamsMessage,
} from '../integrations/index.ts';
import type { CoreDeps } from '../kernel/context.ts';

export type IntegrationKind = 'slack' | 'teams' | 'hubspot' | 'pipedrive';

/** The outbox's label of an integration's delivery (sl_integration_url): `integration:<kind>:<id>`. */
const LABEL = /^integration:(slack|teams|hubspot|pipedrive):([0-9a-f-]{36})$/;

/** The integration a claimed delivery goes to, or null for a webhook URL. */
export function integrationOf(url: string): { kind: IntegrationKind; id: string } | null {
  const m = LABEL.exec(url);
  return m ? { kind: m[1] as IntegrationKind, id: m[2] as string } : null;
}

interface StoredSignal {
  event: SignalKind;
  timestamp: string;
  data: {
    website_id: string;
    tracker_site: string;
    visitor: {
      ip: string;
      identification_id: string | null;
      company_name: string | null;
      domain: string | null;
      country: string | null;
      first_seen: string | null;
      last_seen: string | null;
      pages_viewed: number;
      active_seconds: number;
      high_intent: boolean;
      pages: string[];
    };
    icp: { name: string; score: number } | null;
  };
}

/** A day's digest as stored (sl_write_integration_digests): each company's first signal of the day. */
interface StoredDigest {
  event: 'digest';
  timestamp: string;
  data: { day: string; signals: (StoredSignal['data'] & { signal: SignalKind })[] };
}

/**
 * The message the adapters take, from a stored signal (sl_signal_data) and the service's public
 * address (the console link; none without PUBLIC_BASE_URL).
 */
function messageOf(event: SignalKind, timestamp: string, data: StoredSignal['data'], publicBaseUrl: string | undefined): SignalMessage {
  const v = data.visitor;
  const id = v.identification_id ?? '';
  return {
    signal: event,
    occurred_at: timestamp,
    website: { id: data.website_id, domain: data.tracker_site },
    visitor: {
      id,
      company_name: v.company_name,
      domain: v.domain,
      country_code: v.country,
      pages: v.pages,
      page_count: v.pages_viewed,
      active_ms: v.active_seconds * 1000,
      first_seen: v.first_seen ?? timestamp,
      last_seen: v.last_seen ?? timestamp,
      high_intent: v.high_intent,
    },
    icp: data.icp,
    // The console's visitor page (packages/console/src/site.tsx): #/visitor/<address>/<raw_id>.
    console_url:
      publicBaseUrl && id ? `${publicBaseUrl.replace(/\/$/, '')}/console/#/visitor/${encodeURIComponent(v.ip)}/${encodeURIComponent(id)}` : null,
  };
}

/**
 * Chat webhooks are URLs the account gave us: they go through the webhook transport, with its SSRF
 * guard, its connection bounds and its receiver timeout, like every webhook.
 */
function guardedSend(ctx: CoreDeps): Send {
  return async (url, init) => {
    const answer = await ctx.webhooks.request(url, {
      method: 'POST',
      headers: init.headers,
      body: init.body ?? '',
      timeoutMs: ctx.webhookTimeoutMs,
    });
    return { status: answer.status, headers: answer.headers ?? {}, text: async () => answer.body ?? '' };
  };
}

const vendorFetch: Send = (url, init) => fetch(url, init);

/** One delivery's attempt at an integration: the adapter's outcome for the stored signal. */
export async function sendToIntegration(
  ctx: CoreDeps,
  kind: IntegrationKind,
  secret: string,
  eventId: string,
  body: string,
): Promise<DeliveryOutcome> {
  const stored = JSON.parse(body) as StoredSignal | StoredDigest;
  if (stored.event === 'digest') {
    const { day, signals } = stored.data;
    const messages = signals.map((d) => messageOf(d.signal, stored.timestamp, d, ctx.publicBaseUrl));
    // Only chat integrations keep digests (the integrations table's CHECK).
    const digest = kind === 'teams' ? teamsDigest(messages, day) : slackDigest(messages, day);
    return postToChatWebhook({ send: guardedSend(ctx) }, secret, digest);
  }
  const message = messageOf(stored.event, stored.timestamp, stored.data, ctx.publicBaseUrl);
  switch (kind) {
    case 'slack':
      return postToChatWebhook({ send: guardedSend(ctx) }, secret, slackMessage(message));
    case 'teams':
      return postToChatWebhook({ send: guardedSend(ctx) }, secret, teamsMessage(message));
    // The CRMs' hosts are fixed vendors' (not an address the account chose): the runtime's fetch,
    // as the IP providers use it (msw intercepts it in tests).
    case 'hubspot':
      return pushToHubSpot({ send: vendorFetch, token: secret }, message, { idempotencyKey: eventId });
    case 'pipedrive':
      return pushToPipedrive({ send: vendorFetch, token: secret }, message, { idempotencyKey: eventId });
  }
}
