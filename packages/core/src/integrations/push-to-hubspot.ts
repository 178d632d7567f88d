/**
 * HubSpot CRM push (CRM API v3, https://developers.hubspot.com/docs/api-reference/crm-companies-v3/guide
 * and .../crm-notes-v3/guide). Auth: a private app's access token as `Authorization: Bearer <token>`
 * (scopes crm.objects.companies.read/write; notes are written through the same objects API).
 *
 * Steps (each a documented endpoint):
 * 1. `POST /crm/v3/objects/companies/search` with `filterGroups: [{ filters: [{ propertyName: 'domain',
 *    operator: 'EQ', value }] }]`, oldest first (`sorts` on `createdate`): answer `{ total, results:
 *    [{ id, properties }] }`. A company the customer already has is used as it is, never overwritten.
 * 2. None: `POST /crm/v3/objects/companies` with `properties: { name, domain }`: answer 201 `{ id }`.
 * 3. `POST /crm/v3/objects/notes/search` for a note whose `hs_note_body` CONTAINS_TOKEN the push's
 *    reference (noteReference: one letters-and-digits word derived from the idempotency key).
 * 4. None: `POST /crm/v3/objects/notes` with `properties: { hs_timestamp, hs_note_body }` (body at most
 *    65,536 characters) and `associations: [{ to: { id }, types: [{ associationCategory:
 *    'HUBSPOT_DEFINED', associationTypeId: 190 }] }]` (190: note to company): answer 201 `{ id }`.
 * The result's externalId is the company's id.
 *
 * Idempotency: a retry, after a success or after a timeout whose request did land, finds the company
 * by its domain (step 1) and the note by its reference (step 3), and creates neither again. HubSpot's
 * search index trails a write by a few seconds; the outbox's first retry comes later than that.
 *
 * Answers (https://developers.hubspot.com/docs/api/usage-details, error handling): 401 (bad or revoked
 * token) and 403 (missing scope) are permanent; 429 (`policyName` TEN_SECONDLY_ROLLING / SECONDLY /
 * DAILY; the search endpoints allow a few requests a second) is retried after `Retry-After` when sent,
 * else after the rolling window (`X-HubSpot-RateLimit-Interval-Milliseconds`, else one second for
 * the secondly limits; the daily limit is left to the outbox's schedule); other 4xx permanent; 5xx and no answer retried. Error bodies are
 * `{ status: 'error', message, correlationId, category }`: the message is quoted, the token never.
 */
import { crmNoteHtml } from './crm-note.ts';
import type { SignalMessage } from './signal-message.ts';
import {
  type CrmDeps,
  type DeliveryOutcome,
  headerOf,
  idOf,
  isFailure,
  jsonObject,
  noteReference,
  requestJson,
  unexpectedAnswer,
  type VendorAnswer,
  vendorUrl,
} from './vendor-http.ts';

export const HUBSPOT_BASE_URL = 'https://api.hubapi.com';
/** HubSpot-defined association type id: note → company. */
export const HUBSPOT_NOTE_TO_COMPANY = 190;
const VENDOR = 'HubSpot';

/**
 * The wait a 429 without Retry-After asks for: the rolling window HubSpot names for its per-second
 * limits (else one second); for the daily limit, or an unnamed one, the outbox's own schedule.
 */
function hubspotRateLimitDelay(answer: VendorAnswer): number | undefined {
  const policy = jsonObject(answer.text)?.policyName;
  if (typeof policy === 'string' && /DAILY/.test(policy)) return undefined;
  const interval = Number(headerOf(answer.headers, 'x-hubspot-ratelimit-interval-milliseconds'));
  if (Number.isFinite(interval) && interval > 0) return interval;
  return typeof policy === 'string' && /SECONDLY/.test(policy) ? 1000 : undefined;
}

/**
 * Finds or creates the visitor's company in HubSpot by domain and attaches one note describing the
 * visit. Idempotent on `idempotencyKey`: the same key never makes a second company or note.
 */
export async function pushToHubSpot(deps: CrmDeps, m: SignalMessage, opts: { idempotencyKey: string }): Promise<DeliveryOutcome> {
  const domain = m.visitor.domain?.trim().toLowerCase();
  if (!domain) return { ok: false, retryable: false, error: 'HubSpot: the visitor has no company domain, and companies are matched by domain' };
  if (!opts.idempotencyKey) return { ok: false, retryable: false, error: 'HubSpot: an idempotency key is required' };
  const base = deps.baseUrl ?? HUBSPOT_BASE_URL;
  const secrets = [deps.token];
  const call = (path: string, body: unknown) =>
    requestJson(
      deps,
      VENDOR,
      vendorUrl(base, path),
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${deps.token}`, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
      },
      secrets,
      hubspotRateLimitDelay,
    );

  const found = await call('/crm/v3/objects/companies/search', {
    filterGroups: [{ filters: [{ propertyName: 'domain', operator: 'EQ', value: domain }] }],
    sorts: [{ propertyName: 'createdate', direction: 'ASCENDING' }],
    properties: ['name', 'domain'],
    limit: 1,
  });
  if (isFailure(found)) return found;
  const companies = resultIds(found.json);
  if (companies === null) return unexpectedAnswer(VENDOR, found.status, 'a list of results');
  let companyId = companies[0] ?? null;
  if (companyId === null) {
    const created = await call('/crm/v3/objects/companies', { properties: { name: m.visitor.company_name?.trim() || domain, domain } });
    if (isFailure(created)) return created;
    companyId = idOf(created.json.id);
    if (companyId === null) return unexpectedAnswer(VENDOR, created.status, "the new company's id");
  }

  const reference = await noteReference(opts.idempotencyKey);
  const notes = await call('/crm/v3/objects/notes/search', {
    filterGroups: [{ filters: [{ propertyName: 'hs_note_body', operator: 'CONTAINS_TOKEN', value: reference }] }],
    properties: ['hs_note_body'],
    limit: 1,
  });
  if (isFailure(notes)) return notes;
  const written = resultIds(notes.json);
  if (written === null) return unexpectedAnswer(VENDOR, notes.status, 'a list of results');
  if (written.length > 0) return { ok: true, externalId: companyId };

  const note = await call('/crm/v3/objects/notes', {
    properties: { hs_timestamp: m.occurred_at, hs_note_body: crmNoteHtml(m, reference) },
    associations: [{ to: { id: companyId }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: HUBSPOT_NOTE_TO_COMPANY }] }],
  });
  if (isFailure(note)) return note;
  return { ok: true, externalId: companyId };
}

/** The ids of a search answer's `results`, or null when the answer has no such list (never read as "none found"). */
function resultIds(json: Record<string, unknown>): string[] | null {
  if (!Array.isArray(json.results)) return null;
  return json.results.flatMap((r: unknown) => {
    const id = r && typeof r === 'object' ? idOf((r as Record<string, unknown>).id) : null;
    return id === null ? [] : [id];
  });
}
