/**
 * Pipedrive CRM push (https://developers.pipedrive.com/docs/api/v1/Organizations, .../v1/Notes).
 * Auth: the user's API token in the `x-api-token` header (Pipedrive's documented header; never the
 * `api_token` query parameter, which would put the token in URLs and logs). Base URL
 * `https://api.pipedrive.com` or the company's own `https://<company>.pipedrive.com`.
 *
 * Steps (each a documented endpoint):
 * 1. `GET /api/v2/organizations/search?term=<domain>&fields=custom_fields`: answer `{ success, data:
 *    { items: [{ result_score, item: { id, name, custom_fields: [<matched values>], … } }] } }`. An
 *    organization whose matched custom field (a "Website" or "Domain" field) is that domain, as a bare
 *    domain or a URL, is the company. Organizations have no built-in website field.
 * 2. None: the same search with `term=<company name>&fields=name&exact_match=true` (case-insensitive):
 *    the organization of that name, which is also how an organization this adapter added is found.
 * 3. None: `POST /api/v2/organizations` with `{ name }` (and `custom_fields: { <websiteFieldKey>:
 *    domain }` when the account named its website field): answer `{ success, data: { id } }`.
 * 4. `GET /v1/notes?org_id=<id>&sort=add_time DESC&limit=100`: answer `{ success, data: [{ id, content }]
 *    | null }`; a note whose content holds the push's reference was already written.
 * 5. None: `POST /v1/notes` with `{ content, org_id }` (content is HTML): answer `{ success, data: { id } }`.
 * The result's externalId is the organization's id.
 *
 * Idempotency: a retry finds the organization (step 1 or 2) and, through the notes list (not the
 * search index, so a note written a moment ago is there), the note; it adds neither again. The
 * search index trails an added organization by moments; the outbox's first retry comes later.
 *
 * Answers (https://pipedrive.readme.io/docs/core-api-concepts-http-status-codes, .../rate-limiting):
 * 401 (bad token) and 403 (no permission) permanent; 402 (payment required) and other 4xx permanent;
 * 429 (2-second window, search 10 requests per 2 s, daily token budget) retried after `Retry-After`,
 * else `x-ratelimit-reset` seconds; 5xx and no answer retried. Error bodies are `{ success: false,
 * error, error_info }`: `error` is quoted, the token never.
 */
import { crmNoteHtml } from './crm-note.ts';
import type { SignalMessage } from './signal-message.ts';
import {
  type CrmDeps,
  type DeliveryOutcome,
  headerOf,
  idOf,
  isFailure,
  type JsonStep,
  noteReference,
  requestJson,
  unexpectedAnswer,
  type VendorAnswer,
  vendorUrl,
} from './vendor-http.ts';

export const PIPEDRIVE_BASE_URL = 'https://api.pipedrive.com';
const VENDOR = 'Pipedrive';
/** The most recent notes of the organization looked through for the push's reference. */
const NOTES_CHECKED = 100;

export interface PipedriveDeps extends CrmDeps {
  /**
   * The key of the account's organization custom field that holds the website or domain, when it has
   * one: an organization added here gets the domain in it. Finding by domain needs no key (step 1).
   */
  websiteFieldKey?: string;
}

function pipedriveRateLimitDelay(answer: VendorAnswer): number | undefined {
  const reset = Number(headerOf(answer.headers, 'x-ratelimit-reset'));
  return Number.isFinite(reset) && reset >= 0 ? reset * 1000 : undefined;
}

/** The host a website value names, lower-case and without `www.`: `https://www.Acme.com/x` → `acme.com`. */
function hostNamed(value: string): string | null {
  const text = value.trim().toLowerCase();
  if (!text || /\s/.test(text)) return null;
  try {
    return new URL(text.includes('://') ? text : `https://${text}`).hostname.replace(/^www\./, '');
  } catch {
    return null;
  }
}

/**
 * Finds or adds the visitor's company as a Pipedrive organization and adds one note describing the
 * visit. Idempotent on `idempotencyKey`: the same key never adds a second organization or note.
 */
export async function pushToPipedrive(deps: PipedriveDeps, m: SignalMessage, opts: { idempotencyKey: string }): Promise<DeliveryOutcome> {
  const domain = hostNamed(m.visitor.domain ?? '');
  if (!domain) return { ok: false, retryable: false, error: 'Pipedrive: the visitor has no company domain, and organizations are matched by domain' };
  if (!opts.idempotencyKey) return { ok: false, retryable: false, error: 'Pipedrive: an idempotency key is required' };
  const base = deps.baseUrl ?? PIPEDRIVE_BASE_URL;
  const headers = { 'x-api-token': deps.token, Accept: 'application/json' };
  const get = (path: string, query: Record<string, string>) =>
    requestJson(deps, VENDOR, vendorUrl(base, path, query), { method: 'GET', headers }, [deps.token], pipedriveRateLimitDelay);
  const post = (path: string, body: unknown) =>
    requestJson(
      deps,
      VENDOR,
      vendorUrl(base, path),
      { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body) },
      [deps.token],
      pipedriveRateLimitDelay,
    );

  const byWebsite = await get('/api/v2/organizations/search', { term: domain, fields: 'custom_fields', limit: '20' });
  if (isFailure(byWebsite)) return byWebsite;
  const websiteItems = searchItems(byWebsite);
  if (websiteItems === null) return unexpectedAnswer(VENDOR, byWebsite.status, 'a list of search items');
  let orgId =
    websiteItems.find((item) => Array.isArray(item.custom_fields) && item.custom_fields.some((v) => typeof v === 'string' && hostNamed(v) === domain))
      ?.id ?? null;

  const name = m.visitor.company_name?.trim() || domain;
  if (orgId === null) {
    const byName = await get('/api/v2/organizations/search', { term: name, fields: 'name', exact_match: 'true', limit: '1' });
    if (isFailure(byName)) return byName;
    const nameItems = searchItems(byName);
    if (nameItems === null) return unexpectedAnswer(VENDOR, byName.status, 'a list of search items');
    orgId = nameItems[0]?.id ?? null;
  }
  if (orgId === null) {
    const body: Record<string, unknown> = { name };
    if (deps.websiteFieldKey) body.custom_fields = { [deps.websiteFieldKey]: domain };
    const added = await post('/api/v2/organizations', body);
    if (isFailure(added)) return added;
    orgId = idOf(dataObject(added)?.id);
    if (orgId === null) return unexpectedAnswer(VENDOR, added.status, "the new organization's id");
  }

  const reference = await noteReference(opts.idempotencyKey);
  const notes = await get('/v1/notes', { org_id: orgId, start: '0', limit: String(NOTES_CHECKED), sort: 'add_time DESC' });
  if (isFailure(notes)) return notes;
  if (notes.json.success !== true || !(notes.json.data === null || Array.isArray(notes.json.data))) {
    return unexpectedAnswer(VENDOR, notes.status, 'a list of notes');
  }
  const written = ((notes.json.data as unknown[] | null) ?? []).some(
    (n) =>
      !!n &&
      typeof n === 'object' &&
      typeof (n as Record<string, unknown>).content === 'string' &&
      ((n as Record<string, unknown>).content as string).includes(reference),
  );
  if (written) return { ok: true, externalId: orgId };

  const note = await post('/v1/notes', { content: crmNoteHtml(m, reference), org_id: Number(orgId) });
  if (isFailure(note)) return note;
  if (idOf(dataObject(note)?.id) === null) return unexpectedAnswer(VENDOR, note.status, "the new note's id");
  return { ok: true, externalId: orgId };
}

function dataObject(step: Exclude<JsonStep, { ok: false }>): Record<string, unknown> | null {
  const data = step.json.data;
  return step.json.success === true && data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
}

/** A search answer's items as `{ id, custom_fields }`, or null when the answer has no item list (never read as "none found"). */
function searchItems(step: Exclude<JsonStep, { ok: false }>): { id: string; custom_fields: unknown }[] | null {
  const items = dataObject(step)?.items;
  if (!Array.isArray(items)) return null;
  return items.flatMap((entry: unknown) => {
    const item = entry && typeof entry === 'object' ? (entry as Record<string, unknown>).item : null;
    if (!item || typeof item !== 'object') return [];
    const id = idOf((item as Record<string, unknown>).id);
    return id === null ? [] : [{ id, custom_fields: (item as Record<string, unknown>).custom_fields }];
  });
}
