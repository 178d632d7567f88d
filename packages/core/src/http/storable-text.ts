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
 * query record that Postgres could not store as given; undefined when there is none.
 */
export function findUnstorableText(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return isUnstorableText(value) ? path || 'body' : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], path ? `${path}.${i}` : String(i));
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (isUnstorableText(k)) return at;
      const found = findUnstorableText(v, at);
      if (found) return found;
    }
  }
  return undefined;
}
