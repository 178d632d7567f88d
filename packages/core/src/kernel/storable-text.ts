/**
 * Text Postgres can store as given. A NUL character is refused by Postgres outright (a client
 * mistake that would surface as a 500), and an unpaired UTF-16 surrogate has no UTF-8 form: it
 * would be stored as U+FFFD while the response echoed the original, so the caller and the database
 * would disagree about what was saved. Both are refused at the door, for every field of every route.
 */
// Without the `u` flag a regex sees UTF-16 code units, which is what finding a lone half needs.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding NUL is the point of this pattern.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired UTF-16 surrogates';

/** Whether a string holds a NUL or an unpaired surrogate. */
export function isUnstorableText(s: string): boolean {
  return UNSTORABLE.test(s);
}

/**
 * The path (`name`, `tags.2`, …) of the first string, or object key, in a parsed JSON value or
 * query record that Postgres could not store as given; undefined when there is none. Walked with an
 * explicit stack: a body nested thousands deep (a few KiB of brackets) must not overflow the call
 * stack and turn a client's mistake into a 500.
 */
export function findUnstorableText(value: unknown, path = ''): string | undefined {
  const pending: [unknown, string][] = [[value, path]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [v, at] = next;
    if (typeof v === 'string') {
      if (isUnstorableText(v)) return at || 'body';
    } else if (Array.isArray(v)) {
      // Pushed last to first, so the first offending element is found first.
      for (let i = v.length - 1; i >= 0; i--) pending.push([v[i], at ? `${at}.${i}` : String(i)]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i] as [string, unknown];
        const childAt = at ? `${at}.${k}` : k;
        if (isUnstorableText(k)) return childAt;
        pending.push([child, childAt]);
      }
    }
  }
  return undefined;
}

/**
 * `text.slice(0, end)`, never ending on the first half of a surrogate pair: a cut through an emoji
 * would leave an unpaired surrogate, which is text Postgres cannot store (see above). Every place
 * that shortens text it will store or answer cuts with this.
 */
export function sliceWhole(text: string, end: number): string {
  const cut = text.slice(0, Math.max(0, end));
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
