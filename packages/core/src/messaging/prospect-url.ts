import { z } from '@hono/zod-openapi';
import { whenGiven } from '../kernel/schemas.ts';

/**
 * The prospect of api-full-request is named by a personal LinkedIn profile URL, and only by one
 * (spec: `https://[www.]linkedin.com/in/<slug>`, optional trailing slash). The URL is read by hand
 * rather than through `new URL`, which would quietly repair what the rule refuses (it drops tabs,
 * turns `\` into `/`, resolves `..`, lower-cases the scheme), so every refusal can name the one
 * rule the URL breaks.
 *
 * Accepted, and how they are canonicalised (the form stored, fingerprinted and looked up):
 * - scheme `https` and host `linkedin.com` or `www.linkedin.com`, in any letter case: both are
 *   case-insensitive by RFC 3986 → `https://www.linkedin.com`. Country hosts (`uk.linkedin.com`)
 *   are refused: the spec names the two hosts exactly, and LinkedIn serves the same profile on www.
 * - path `/in/<slug>` or `/in/<slug>/` (`in` in any case) → `/in/<slug>`, no trailing slash.
 * - the slug: 3 to 100 characters (LinkedIn's rule for profile URLs), each a letter, a digit or a
 *   hyphen, with at least one letter or digit. Letters include non-ASCII ones (`josé`, `राहुल`, with
 *   their combining marks), given raw as a browser shows them or percent-encoded as it sends them.
 *   Letters are lower-cased (LinkedIn treats profile URLs case-insensitively and shows them in lower
 *   case, so `JohnSmith` and `johnsmith` are one prospect; a letter whose lower case is two
 *   characters, such as `İ`, is kept); non-ASCII characters are percent-encoded as UTF-8 with
 *   upper-case hex (RFC 3986 §6.2.2.1); a percent-encoded ASCII letter, digit or hyphen is decoded
 *   (§6.2.2.2). Otherwise the slug is kept as given: no Unicode normalisation, no transliteration.
 *
 * Refused: any other scheme, host, user info, port, path (company pages, posts, feed items,
 * articles, old `/pub/` URLs, a profile's sub-pages), a query string or fragment even when empty,
 * whitespace or control characters anywhere, malformed percent-encoding, and anything longer than
 * MAX_PROSPECT_URL_CHARS.
 */

/** Longest input read at all: a 100-letter slug of 4-byte characters, percent-encoded, fits with room to spare. */
export const MAX_PROSPECT_URL_CHARS = 2048;
export const MIN_SLUG_CHARS = 3;
export const MAX_SLUG_CHARS = 100;

export const CANONICAL_PROFILE_PREFIX = 'https://www.linkedin.com/in/';

export type ProspectUrlCheck = { ok: true; url: string; slug: string } | { ok: false; error: string };

const ACCEPTED_HOSTS = new Set(['linkedin.com', 'www.linkedin.com']);

/** Pages of linkedin.com that are not personal profiles, and what to call them in a refusal. */
const NOT_PROFILES: Record<string, string> = {
  company: 'company pages (/company/...) are not personal profiles',
  school: 'school pages (/school/...) are not personal profiles',
  showcase: 'showcase pages (/showcase/...) are not personal profiles',
  posts: 'posts (/posts/...) are not personal profiles',
  feed: 'feed items (/feed/...) are not personal profiles',
  pulse: 'articles (/pulse/...) are not personal profiles',
  groups: 'groups (/groups/...) are not personal profiles',
  jobs: 'job pages (/jobs/...) are not personal profiles',
  events: 'event pages (/events/...) are not personal profiles',
  pub: 'old public-profile URLs (/pub/...) are not accepted; use the profile’s /in/<slug> address',
};

const SHAPE = 'must be a personal profile URL of the form https://www.linkedin.com/in/<slug>';

/** Shown in a message without letting a long or odd input take it over. */
const quoted = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);

/** A slug character LinkedIn uses: a letter (with its combining marks), a digit, or a hyphen. */
const SLUG_CHAR = /^[\p{L}\p{M}\p{N}-]$/u;
const ASCII_ALNUM_OR_HYPHEN = /^[A-Za-z0-9-]$/;

/** Decodes the slug's %XX escapes as UTF-8, leaving raw characters as they are; null names what is wrong. */
function decodeSlug(raw: string): { ok: true; text: string } | { ok: false; error: string } {
  if (/%(?![0-9A-Fa-f]{2})/.test(raw))
    return { ok: false, error: 'the profile slug has a malformed percent-encoding (% must be followed by two hex digits)' };
  try {
    return { ok: true, text: decodeURIComponent(raw) };
  } catch {
    return { ok: false, error: 'the profile slug’s percent-encoding is not valid UTF-8' };
  }
}

/** The slug as stored: letters lower-cased, every character but ASCII letters, digits and hyphens percent-encoded as UTF-8. */
function canonicalSlug(decoded: string): string {
  let out = '';
  for (const ch of decoded) {
    const lower = ch.toLowerCase();
    // A letter whose lower case is more than one character (İ → i̇) is kept: its slug would otherwise grow.
    const folded = [...lower].length === 1 ? lower : ch;
    out += ASCII_ALNUM_OR_HYPHEN.test(folded) ? folded : encodeURIComponent(folded);
  }
  return out;
}

function checkSlug(rawSlug: string): { ok: true; slug: string } | { ok: false; error: string } {
  const decoded = decodeSlug(rawSlug);
  if (!decoded.ok) return decoded;
  const chars = [...decoded.text];
  for (const ch of chars) {
    if (!SLUG_CHAR.test(ch)) return { ok: false, error: `the profile slug may contain only letters, digits and hyphens, not ${quoted(ch)}` };
  }
  if (chars.length < MIN_SLUG_CHARS) return { ok: false, error: `the profile slug must be at least ${MIN_SLUG_CHARS} characters` };
  if (chars.length > MAX_SLUG_CHARS) return { ok: false, error: `the profile slug must be at most ${MAX_SLUG_CHARS} characters` };
  if (chars.every((ch) => ch === '-')) return { ok: false, error: 'the profile slug must contain a letter or digit' };
  return { ok: true, slug: canonicalSlug(decoded.text) };
}

/**
 * Checks a prospect profile URL against the rule above: its canonical form, or the rule it breaks
 * (a sentence that reads after the field name, e.g. "must use https:, not http:").
 */
export function checkProspectUrl(raw: string): ProspectUrlCheck {
  if (raw.length === 0) return { ok: false, error: `is empty; it ${SHAPE}` };
  if (raw.length > MAX_PROSPECT_URL_CHARS) return { ok: false, error: `must be at most ${MAX_PROSPECT_URL_CHARS} characters` };
  if (/[\s\p{Cc}]/u.test(raw)) return { ok: false, error: 'must not contain whitespace or control characters (trim it before sending)' };

  if (raw.includes('\\')) return { ok: false, error: `must not contain a backslash; it ${SHAPE}` };

  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw)?.[1];
  if (scheme === undefined) return { ok: false, error: `must be an absolute URL starting with https://; it ${SHAPE}` };
  if (scheme.toLowerCase() !== 'https') return { ok: false, error: `must use https:, not ${scheme.toLowerCase()}:` };
  const afterScheme = raw.slice(scheme.length + 1);
  if (!afterScheme.startsWith('//')) return { ok: false, error: `must be an absolute URL starting with https://; it ${SHAPE}` };

  const rest = afterScheme.slice(2);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  if (authority.includes('@')) return { ok: false, error: 'must not contain user info (a name@ before the host)' };
  if (authority.includes(':')) return { ok: false, error: 'must not name a port' };
  const host = authority.toLowerCase();
  if (!ACCEPTED_HOSTS.has(host)) {
    return { ok: false, error: `host must be linkedin.com or www.linkedin.com, not ${quoted(host)}` };
  }

  const pathAndMore = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  const q = pathAndMore.indexOf('?');
  const f = pathAndMore.indexOf('#');
  if (q >= 0 && (f < 0 || q < f)) return { ok: false, error: 'must not have a query string (remove the ? and everything after it)' };
  if (f >= 0) return { ok: false, error: 'must not have a fragment (remove the # and everything after it)' };

  const segments = pathAndMore.split('/').slice(1);
  const first = segments[0] ?? '';
  if (first === '') return { ok: false, error: SHAPE };
  if (first.toLowerCase() !== 'in') {
    return { ok: false, error: NOT_PROFILES[first.toLowerCase()] ?? `only personal profiles (/in/<slug>) are accepted, not ${quoted(`/${first}/`)}` };
  }
  const slug = segments[1] ?? '';
  if (slug === '') {
    return { ok: false, error: segments.length > 2 && segments.slice(2).some(Boolean) ? SHAPE : 'the profile slug after /in/ is empty' };
  }
  // `/in/<slug>` or `/in/<slug>/`: anything further is a page of the profile, not the profile.
  if (segments.length > 3 && segments.slice(2).every((s) => s === '')) return { ok: false, error: 'may end with at most one slash' };
  if (segments.length > 3 || (segments.length === 3 && segments[2] !== '')) {
    return {
      ok: false,
      error: 'sub-paths of a profile (such as /detail/recent-activity) are not accepted; send the profile’s own /in/<slug> address',
    };
  }
  if (slug === '.' || slug === '..') return { ok: false, error: SHAPE };
  const checked = checkSlug(slug);
  if (!checked.ok) return checked;
  return { ok: true, url: `${CANONICAL_PROFILE_PREFIX}${checked.slug}`, slug: checked.slug };
}

/** The profile URL as api-full-request takes it: checked, then canonical (`https://www.linkedin.com/in/<slug>`). */
export const ProspectUrl = z
  .string(whenGiven('must be a string'))
  .transform((raw, ctx) => {
    const checked = checkProspectUrl(raw);
    if (!checked.ok) {
      ctx.addIssue({ code: 'custom', message: checked.error });
      return z.NEVER;
    }
    return checked.url;
  })
  .openapi({
    type: 'string',
    format: 'uri',
    maxLength: MAX_PROSPECT_URL_CHARS,
    description:
      'A personal LinkedIn profile: `https://linkedin.com/in/<slug>` or `https://www.linkedin.com/in/<slug>`, optional trailing slash. ' +
      'The slug is 3–100 letters, digits and hyphens (non-ASCII letters raw or percent-encoded). Company pages, posts, feed items, ' +
      'articles, sub-paths such as /detail/recent-activity, other hosts, http:, user info, ports, query strings and fragments are refused ' +
      'with a 400 naming the rule. Stored as `https://www.linkedin.com/in/<slug>`, letters lower-cased, non-ASCII percent-encoded.',
    example: 'https://www.linkedin.com/in/jane-doe-1a2b3c',
  });
