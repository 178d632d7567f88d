/**
 * An RDAP server's answer for an address (RFC 9083 §5.4, the "ip network" object class) reduced to
 * the facts identification uses, read as hostile input: the text is checked for nesting depth
 * before it is parsed, every field is type-checked, lists and strings are cut to fixed sizes, and
 * anything that does not fit is ignored rather than thrown. What is kept is what gets cached.
 *
 * Fields read (RFC 9083 §5.4, §5.1, jCard RFC 7095):
 * - `objectClassName` must be `ip network`; `startAddress` / `endAddress` (the registered range,
 *   which must hold the queried address: a server cannot make us cache a range it was not asked
 *   about), `ipVersion` (`v4` / `v6`, checked when present), `handle`, `name`, `type` (the registry's
 *   status: ARIN NetType, RIPE/AFRINIC/APNIC status, LACNIC's lower-case words), `country`,
 *   `parentHandle`.
 * - `entities[]`, and each entity's own `entities[]` (ARIN nests the organisation's abuse,
 *   administrative and technical contacts inside the registrant): `handle`, `roles[]`,
 *   `vcardArray` = `["vcard", [[name, params, type, value], ...]]`, of which `fn`, `org`, `kind`,
 *   `email` and `url` are read. Email addresses are kept only as their registrable domains, and
 *   names only of the registrant and of organisations (never a person's, never a phone number).
 * Links, remarks, events, notices and status are not read: nothing identification needs is only there.
 */
import { getDomain } from 'tldts';
import { normaliseCompanyDomain, normaliseCountryCode, readObject, readString } from '../providers/normalise.ts';
import { addressValue, formatAddress } from './address-range.ts';

/** One entity of the answer, flattened: its place in the tree is `parent` (an index in `contacts`). */
export interface RdapContact {
  handle: string | null;
  roles: string[];
  /** vCard `kind`: `org`, `individual`, `group`… */
  kind: string | null;
  /** vCard `fn`. */
  name: string | null;
  /** vCard `org`. */
  org: string | null;
  /** Registrable domains of the contact's email addresses and URLs, in the order given. */
  domains: string[];
  /** The index of the entity this one is nested in; null at the top level. */
  parent: number | null;
}

/** The facts of one registration, as cached (rdap_networks.registration). */
export interface RdapNetwork {
  startAddress: string;
  endAddress: string;
  version: 4 | 6;
  handle: string | null;
  name: string | null;
  type: string | null;
  country: string | null;
  parentHandle: string | null;
  contacts: RdapContact[];
}

/** The sizes nothing we keep may exceed, whatever a server sends. */
export const RDAP_READ_LIMITS = {
  /** Nesting of arrays and objects in the raw text; a real answer is about 8 deep. */
  maxJsonDepth: 32,
  /** Entities kept, all levels together; ARIN's largest answers carry about a dozen. */
  maxEntities: 48,
  /** How deep entities nest (registrant → its contacts → theirs). */
  maxEntityDepth: 3,
  /** vCard properties read per entity. */
  maxVcardProperties: 64,
  /** Roles kept per entity, domains kept per entity. */
  maxListItems: 8,
  /** Longest name, handle or type kept. */
  maxTextLength: 300,
} as const;

/**
 * The network in `text`, or null when the text is not an RDAP ip network holding `queried`, or is
 * nested deeper than the limit. Never throws.
 */
export function readNetwork(text: string, queried: { version: 4 | 6; value: bigint }): RdapNetwork | null {
  if (jsonDepth(text) > RDAP_READ_LIMITS.maxJsonDepth) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const body = readObject(raw);
  if (body?.objectClassName !== 'ip network') return null;
  const start = addressValue(readString(body.startAddress) ?? '');
  const end = addressValue(readString(body.endAddress) ?? '');
  if (!start || !end || start.version !== queried.version || end.version !== queried.version) return null;
  if (start.value > end.value || queried.value < start.value || queried.value > end.value) return null;
  const ipVersion = readString(body.ipVersion);
  if (ipVersion !== null && ipVersion !== `v${queried.version}`) return null;
  return {
    startAddress: formatAddress(queried.version, start.value),
    endAddress: formatAddress(queried.version, end.value),
    version: queried.version,
    handle: text300(body.handle),
    name: text300(body.name),
    type: text300(body.type),
    country: normaliseCountryCode(body.country),
    parentHandle: text300(body.parentHandle),
    contacts: readContacts(body.entities),
  };
}

/**
 * The deepest nesting of `[`/`{` in JSON text, counted outside strings: one pass, no allocation, so a
 * body of half a megabyte of `[[[[` is refused before the parser or our walk ever sees it.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

function text300(v: unknown): string | null {
  const s = readString(v);
  if (s === null) return null;
  return s.replace(/\s+/g, ' ').slice(0, RDAP_READ_LIMITS.maxTextLength);
}

/** Entities breadth first, at most maxEntities in all and maxEntityDepth levels. */
function readContacts(entities: unknown): RdapContact[] {
  const out: RdapContact[] = [];
  const queue: { value: unknown; depth: number; parent: number | null }[] = [];
  const enqueue = (list: unknown, depth: number, parent: number | null) => {
    if (!Array.isArray(list) || depth >= RDAP_READ_LIMITS.maxEntityDepth) return;
    for (const value of list.slice(0, RDAP_READ_LIMITS.maxEntities)) queue.push({ value, depth, parent });
  };
  enqueue(entities, 0, null);
  for (let i = 0; i < queue.length && out.length < RDAP_READ_LIMITS.maxEntities; i++) {
    const item = queue[i];
    const entity = readObject(item?.value);
    if (!item || !entity) continue;
    const vcard = readVcard(entity.vcardArray);
    const roles = Array.isArray(entity.roles)
      ? entity.roles
          .slice(0, RDAP_READ_LIMITS.maxListItems)
          .map((r) => readString(r)?.toLowerCase() ?? null)
          .filter((r): r is string => r !== null && r.length <= 40)
      : [];
    // Only an organisation's or the registrant's name is kept: a person's name is never needed.
    const named = roles.includes('registrant') || vcard.kind === 'org';
    out.push({ handle: text300(entity.handle), roles, ...vcard, ...(named ? {} : { name: null, org: null }), parent: item.parent });
    enqueue(entity.entities, item.depth + 1, out.length - 1);
  }
  return out;
}

/** jCard (RFC 7095): `["vcard", [[name, params, type, value, ...], ...]]`. */
function readVcard(raw: unknown): Pick<RdapContact, 'kind' | 'name' | 'org' | 'domains'> {
  const found: Pick<RdapContact, 'kind' | 'name' | 'org' | 'domains'> = { kind: null, name: null, org: null, domains: [] };
  if (!Array.isArray(raw) || raw[0] !== 'vcard' || !Array.isArray(raw[1])) return found;
  for (const prop of raw[1].slice(0, RDAP_READ_LIMITS.maxVcardProperties)) {
    if (!Array.isArray(prop) || typeof prop[0] !== 'string') continue;
    const name = prop[0].toLowerCase();
    // `org` may be structured (a list of units); its first part is the organisation.
    const value = Array.isArray(prop[3]) ? prop[3][0] : prop[3];
    if (name === 'fn') found.name ??= text300(value);
    else if (name === 'org') found.org ??= text300(value);
    else if (name === 'kind') found.kind ??= text300(value)?.toLowerCase() ?? null;
    else if (name === 'email' || name === 'url') {
      const domain = name === 'email' ? emailDomain(value) : registrable(value);
      if (domain && !found.domains.includes(domain) && found.domains.length < RDAP_READ_LIMITS.maxListItems) found.domains.push(domain);
    }
  }
  return found;
}

function emailDomain(v: unknown): string | null {
  const s = readString(v)?.replace(/^mailto:/i, '') ?? null;
  if (s === null || s.length > 320) return null;
  const at = s.lastIndexOf('@');
  return at < 1 ? null : registrable(s.slice(at + 1));
}

/** A host or URL → its registrable domain (public-suffix aware), or null. */
export function registrable(v: unknown): string | null {
  const host = normaliseCompanyDomain(v);
  return host === null ? null : getDomain(host);
}
