/**
 * An ASN owner's registered name as a company name a person would write: the AS handle, registry
 * noise and repeats taken off, the name itself left alone otherwise (legal forms stay: "Deutsche Bank
 * AG" is the company's name). Registries write the owner as "HANDLE - Organisation"
 * ("CreditSuisseGroup-AS - Credit Suisse Group", "AS267712 - EL ALAMO S.R.L"), sometimes as a handle
 * glued to the front ("VoIP-IC-AS Swisscom (Schweiz) AG"), with Brazilian registration suffixes
 * ("… Ltda - ME") or the organisation twice ("Taprap Nigeria Limited - Taprap Nigeria Limited").
 * A name in capitals only is given its words' capitals ("PALO ALTO NETWORKS" → "Palo Alto Networks"),
 * keeping short words that read as acronyms or legal forms ("AG", "LLC", "IBM") as they are.
 * Returns null when nothing but a handle is left.
 */
export function cleanCompanyName(raw: string): string | null {
  let name = raw.replace(/\s+/g, ' ').trim();
  // "HANDLE - Organisation": the left side is one word that reads as a handle.
  const dash = / - /.exec(name);
  if (dash) {
    const left = name.slice(0, dash.index).trim();
    const right = name.slice(dash.index + 3).trim();
    if (right && isHandle(left)) name = right;
    else if (right && left.toLowerCase() === right.toLowerCase()) name = left;
  }
  // Brazilian registry suffixes for company size and form, not part of the name.
  name = name.replace(/\s+-\s+(ME|EPP|EIRELI|MEI|LTDA)\.?$/i, '').trim();
  // A handle glued in front of the name, and an ASN or handle in brackets after it.
  const words = name.split(' ');
  if (words.length > 1 && isHandle(words[0] as string) && /(^AS\d*-|-AS\d*$|-ASN?(-\d+)?$|^AS\d+$)/i.test(words[0] as string)) {
    name = words.slice(1).join(' ');
  }
  name = name
    .replace(/\s*[([]\s*AS\d+\s*[)\]]$/i, '')
    .replace(/,?\s+AS\d+$/i, '')
    .trim();
  if (!name || (isHandle(name) && /\d|-AS|AS-/i.test(name))) return null;
  return /[a-z]/.test(name) ? name : capitalise(name);
}

/**
 * One word of capitals, digits, dashes and underscores with a dash or a digit in it, or any word
 * that starts or ends with an AS marker: how registries spell handles ("FORD-ASN-01", "AS3389",
 * "CreditSuisseGroup-AS"), which no company writes as its name.
 */
function isHandle(word: string): boolean {
  if (!word || /\s/.test(word)) return false;
  if (/^AS\d+$/i.test(word) || /(^|-)ASN?(-?\d+)?$/i.test(word) || /^AS-/i.test(word)) return true;
  return /^[A-Z0-9_-]+$/.test(word) && /[-_\d]/.test(word) && /[A-Z]/.test(word);
}

/** Short words that are words, not acronyms or legal forms, in the languages registries see most. */
const SHORT_WORDS = new Set([
  'EL',
  'LA',
  'LE',
  'LOS',
  'LAS',
  'DE',
  'DEL',
  'DA',
  'DO',
  'DOS',
  'DAS',
  'DI',
  'DU',
  'DES',
  'EN',
  'OF',
  'AND',
  'THE',
  'FOR',
]);

/** Legal forms written one way whatever the registry's capitals. */
const LEGAL_FORMS: Record<string, string> = { INC: 'Inc', LTD: 'Ltd', CORP: 'Corp', GMBH: 'GmbH', CJSC: 'CJSC', PJSC: 'PJSC', OJSC: 'OJSC' };

/**
 * Words of four letters or more get one capital, as do the short words above (lower case inside the
 * name); legal forms are written as above; other short words (acronyms, legal forms: "AG", "LLC",
 * "IBM") stay as written.
 */
function capitalise(name: string): string {
  let first = true;
  return name.replace(/[A-Z][A-Z'’]*/g, (w) => {
    const atStart = first;
    first = false;
    const legal = LEGAL_FORMS[w];
    if (legal) return legal;
    if (SHORT_WORDS.has(w)) return atStart ? w[0] + w.slice(1).toLowerCase() : w.toLowerCase();
    return w.length <= 3 ? w : w[0] + w.slice(1).toLowerCase();
  });
}
