import { getDomainWithoutSuffix } from 'tldts';
import type { TrafficType } from '../types.ts';
import { HOLDER_NAME_CLASSES } from './registration-policy.ts';

/**
 * Comparing organisation names as registries and ASN lists write them: "COMCAST-7922 - Comcast
 * Cable Communications, LLC" (an AS list), "Comcast Cable Communications, LLC" (ARIN), "DTAG
 * Deutsche Telekom AG"… Words that only say what legal form a company has are dropped, so the same
 * organisation compares equal under its different spellings.
 */

const LEGAL_FORMS = new Set([
  'inc',
  'incorporated',
  'llc',
  'llp',
  'lp',
  'ltd',
  'limited',
  'corp',
  'corporation',
  'co',
  'company',
  'plc',
  'gmbh',
  'mbh',
  'ag',
  'kg',
  'se',
  'sa',
  'sas',
  'sarl',
  'srl',
  'spa',
  'bv',
  'nv',
  'oy',
  'ab',
  'as',
  'asa',
  'aps',
  'kk',
  'pty',
  'pte',
  'the',
]);

/** Name → lower-case words without accents, punctuation or legal forms. */
export function nameWords(name: string): string[] {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/&/g, ' and ')
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '' && !LEGAL_FORMS.has(w));
}

/**
 * An AS list's owner name without its AS handle and country: "CREDITSUISSE-AS - Credit Suisse
 * Group, CH" → "Credit Suisse Group". A name without the `HANDLE - ` shape is kept as it is.
 */
export function ownerName(raw: string): string {
  let name = raw.trim();
  const dash = name.indexOf(' - ');
  if (dash > 0 && !/\s/.test(name.slice(0, dash))) name = name.slice(dash + 3);
  return name.replace(/,\s*[A-Z]{2}$/, '').trim();
}

/**
 * Whether two names are one organisation: the same words, or one name's words found in order
 * inside the other's ("Comcast" in "Comcast Cable Communications"). A one-word name must be at least
 * four letters to be found inside another, so "AT" or "BT" match only themselves.
 */
export function sameOrganisation(a: string, b: string): boolean {
  const x = nameWords(ownerName(a));
  const y = nameWords(ownerName(b));
  if (!x.length || !y.length) return false;
  const [short, long] = x.length <= y.length ? [x, y] : [y, x];
  if (short.length === 1 && (short[0]?.length ?? 0) < 4) return short.join(' ') === long.join(' ');
  for (let i = 0; i + short.length <= long.length; i++) {
    if (short.every((w, k) => long[i + k] === w)) return true;
  }
  return false;
}

/** What the holder's name alone says it is (registration-policy.ts), or null. */
export function nameClass(name: string): TrafficType | 'private' | null {
  const padded = ` ${nameWords(name).join(' ')} `;
  for (const { class: cls, words } of HOLDER_NAME_CLASSES) {
    if (words.some((w) => padded.includes(` ${w} `))) return cls;
  }
  return null;
}

/**
 * Whether a domain plausibly belongs to the organisation named: a word of the name (three letters or
 * more) inside the domain's label, the label inside the name's letters, or the label made of the
 * name's initials ("ibm" for International Business Machines). Guards against a contact's address at
 * the ISP, the IT contractor or the parent company being taken for the holder's own domain.
 */
export function domainFitsName(domain: string, name: string): boolean {
  const label = (getDomainWithoutSuffix(domain) ?? '').replace(/[^a-z0-9]/g, '');
  if (label.length < 2) return false;
  const words = nameWords(name);
  if (!words.length) return false;
  if (words.some((w) => w.length >= 3 && label.includes(w))) return true;
  const joined = words.join('');
  if (label.length >= 3 && joined.includes(label)) return true;
  const initials = words.map((w) => w[0]).join('');
  return initials.length >= 2 && label === initials;
}
