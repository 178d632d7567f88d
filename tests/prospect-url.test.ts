import { CANONICAL_PROFILE_PREFIX, checkProspectUrl, ProspectUrl } from '@sightline/core';
import { describe, expect, it } from 'vitest';

/**
 * The prospect profile-URL rule of api-full-request (spec: `https://[www.]linkedin.com/in/<slug>`,
 * optional trailing slash), as a table: every accepted form with the canonical URL stored for it,
 * and every refused form with the message the 400 gives (after `prospect_url: `).
 */

const SHAPE = 'must be a personal profile URL of the form https://www.linkedin.com/in/<slug>';
const SLUG_CHARS = (ch: string) => `the profile slug may contain only letters, digits and hyphens, not ${JSON.stringify(ch)}`;
const HOST = (host: string) => `host must be linkedin.com or www.linkedin.com, not ${JSON.stringify(host)}`;
const SUB_PATH = 'sub-paths of a profile (such as /detail/recent-activity) are not accepted; send the profile’s own /in/<slug> address';
const QUERY = 'must not have a query string (remove the ? and everything after it)';
const FRAGMENT = 'must not have a fragment (remove the # and everything after it)';
const WHITESPACE = 'must not contain whitespace or control characters (trim it before sending)';
const NOT_ABSOLUTE = `must be an absolute URL starting with https://; it ${SHAPE}`;

const valid: Array<[string, string, string]> = [
  ['www host', 'https://www.linkedin.com/in/jane-doe', 'https://www.linkedin.com/in/jane-doe'],
  ['bare host', 'https://linkedin.com/in/jane-doe', 'https://www.linkedin.com/in/jane-doe'],
  ['trailing slash', 'https://www.linkedin.com/in/jane-doe/', 'https://www.linkedin.com/in/jane-doe'],
  ['bare host and trailing slash', 'https://linkedin.com/in/jane-doe/', 'https://www.linkedin.com/in/jane-doe'],
  ['generated id suffix', 'https://www.linkedin.com/in/jane-doe-4a1b2c3d', 'https://www.linkedin.com/in/jane-doe-4a1b2c3d'],
  ['digits only', 'https://www.linkedin.com/in/12345', 'https://www.linkedin.com/in/12345'],
  ['shortest slug (3)', 'https://www.linkedin.com/in/abc', 'https://www.linkedin.com/in/abc'],
  ['longest slug (100)', `https://www.linkedin.com/in/${'a'.repeat(100)}`, `https://www.linkedin.com/in/${'a'.repeat(100)}`],
  ['scheme and host in capitals', 'HTTPS://WWW.LINKEDIN.COM/in/jane-doe', 'https://www.linkedin.com/in/jane-doe'],
  ['slug letters lower-cased', 'https://www.linkedin.com/in/JaneDoe', 'https://www.linkedin.com/in/janedoe'],
  ['/IN/ in capitals', 'https://www.linkedin.com/IN/jane-doe', 'https://www.linkedin.com/in/jane-doe'],
  ['percent-encoded accents', 'https://www.linkedin.com/in/jos%C3%A9-garc%C3%ADa-1a2b', 'https://www.linkedin.com/in/jos%C3%A9-garc%C3%ADa-1a2b'],
  ['lower-case hex made upper-case', 'https://www.linkedin.com/in/jos%c3%a9-garcia', 'https://www.linkedin.com/in/jos%C3%A9-garcia'],
  ['raw accents encoded', 'https://www.linkedin.com/in/josé-garcía', 'https://www.linkedin.com/in/jos%C3%A9-garc%C3%ADa'],
  ['encoded ASCII decoded', 'https://www.linkedin.com/in/%6Aane-%64oe', 'https://www.linkedin.com/in/jane-doe'],
  ['non-Latin script with marks', 'https://www.linkedin.com/in/राहुल', 'https://www.linkedin.com/in/%E0%A4%B0%E0%A4%BE%E0%A4%B9%E0%A5%81%E0%A4%B2'],
  ['CJK letters', 'https://www.linkedin.com/in/%E7%8E%8B%E5%B0%8F%E6%98%8E', 'https://www.linkedin.com/in/%E7%8E%8B%E5%B0%8F%E6%98%8E'],
  ['non-ASCII letters lower-cased', 'https://www.linkedin.com/in/ÉLODIE-x', 'https://www.linkedin.com/in/%C3%A9lodie-x'],
  ['encoded capital accent lower-cased', 'https://www.linkedin.com/in/%C3%89lodie-x', 'https://www.linkedin.com/in/%C3%A9lodie-x'],
  ['letter with a two-character lower case kept', 'https://www.linkedin.com/in/İlker-x', 'https://www.linkedin.com/in/%C4%B0lker-x'],
];

const invalid: Array<[string, string, string]> = [
  ['empty', '', `is empty; it ${SHAPE}`],
  ['http', 'http://www.linkedin.com/in/jane-doe', 'must use https:, not http:'],
  ['HTTP in capitals', 'HTTP://www.linkedin.com/in/jane-doe', 'must use https:, not http:'],
  ['another scheme', 'ftp://www.linkedin.com/in/jane-doe', 'must use https:, not ftp:'],
  ['no scheme', 'www.linkedin.com/in/jane-doe', NOT_ABSOLUTE],
  ['no scheme, bare host', 'linkedin.com/in/jane-doe', NOT_ABSOLUTE],
  ['scheme-relative', '//www.linkedin.com/in/jane-doe', NOT_ABSOLUTE],
  ['https: without //', 'https:www.linkedin.com/in/jane-doe', NOT_ABSOLUTE],
  ['country host', 'https://uk.linkedin.com/in/jane-doe', HOST('uk.linkedin.com')],
  ['mobile host', 'https://m.linkedin.com/in/jane-doe', HOST('m.linkedin.com')],
  ['look-alike suffix', 'https://linkedin.com.evil.com/in/jane-doe', HOST('linkedin.com.evil.com')],
  ['look-alike prefix', 'https://evil-linkedin.com/in/jane-doe', HOST('evil-linkedin.com')],
  ['trailing dot host', 'https://www.linkedin.com./in/jane-doe', HOST('www.linkedin.com.')],
  ['another site', 'https://example.com/in/jane-doe', HOST('example.com')],
  ['empty host', 'https:///in/jane-doe', HOST('')],
  ['user info', 'https://user@www.linkedin.com/in/jane-doe', 'must not contain user info (a name@ before the host)'],
  ['user info spoof', 'https://www.linkedin.com@evil.com/in/jane-doe', 'must not contain user info (a name@ before the host)'],
  ['port', 'https://www.linkedin.com:443/in/jane-doe', 'must not name a port'],
  ['company page', 'https://www.linkedin.com/company/acme', 'company pages (/company/...) are not personal profiles'],
  ['school page', 'https://www.linkedin.com/school/mit/', 'school pages (/school/...) are not personal profiles'],
  ['post', 'https://www.linkedin.com/posts/jane-doe_activity-7000000000000000000-abcd', 'posts (/posts/...) are not personal profiles'],
  ['feed item', 'https://www.linkedin.com/feed/update/urn:li:activity:7000000000000000000/', 'feed items (/feed/...) are not personal profiles'],
  ['article', 'https://www.linkedin.com/pulse/some-article-jane-doe', 'articles (/pulse/...) are not personal profiles'],
  [
    'old public profile',
    'https://www.linkedin.com/pub/jane-doe/1/2/3',
    'old public-profile URLs (/pub/...) are not accepted; use the profile’s /in/<slug> address',
  ],
  ['other page', 'https://www.linkedin.com/sales/lead/123', 'only personal profiles (/in/<slug>) are accepted, not "/sales/"'],
  ['home page', 'https://www.linkedin.com/', SHAPE],
  ['no path', 'https://www.linkedin.com', SHAPE],
  ['activity sub-path', 'https://www.linkedin.com/in/jane-doe/detail/recent-activity', SUB_PATH],
  ['activity sub-path with slash', 'https://www.linkedin.com/in/jane-doe/recent-activity/all/', SUB_PATH],
  ['overlay sub-path', 'https://www.linkedin.com/in/jane-doe/overlay/contact-info/', SUB_PATH],
  ['two trailing slashes', 'https://www.linkedin.com/in/jane-doe//', 'may end with at most one slash'],
  ['query string', 'https://www.linkedin.com/in/jane-doe?originalSubdomain=uk', QUERY],
  ['empty query', 'https://www.linkedin.com/in/jane-doe?', QUERY],
  ['query after slash', 'https://www.linkedin.com/in/jane-doe/?trk=public_profile', QUERY],
  ['fragment', 'https://www.linkedin.com/in/jane-doe#experience', FRAGMENT],
  ['empty fragment', 'https://www.linkedin.com/in/jane-doe#', FRAGMENT],
  ['/in alone', 'https://www.linkedin.com/in', 'the profile slug after /in/ is empty'],
  ['/in/ alone', 'https://www.linkedin.com/in/', 'the profile slug after /in/ is empty'],
  ['empty slug segment', 'https://www.linkedin.com/in//jane-doe', SHAPE],
  ['dot segment', 'https://www.linkedin.com/in/..', SHAPE],
  ['underscore', 'https://www.linkedin.com/in/jane_doe', SLUG_CHARS('_')],
  ['dot in slug', 'https://www.linkedin.com/in/jane.doe', SLUG_CHARS('.')],
  ['encoded space', 'https://www.linkedin.com/in/jane%20doe', SLUG_CHARS(' ')],
  ['encoded slash', 'https://www.linkedin.com/in/jane%2Fdoe', SLUG_CHARS('/')],
  ['emoji', 'https://www.linkedin.com/in/jane-😀', SLUG_CHARS('😀')],
  ['zero-width space', 'https://www.linkedin.com/in/jane\u200bdoe', SLUG_CHARS('\u200b')],
  ['slug of hyphens', 'https://www.linkedin.com/in/---', 'the profile slug must contain a letter or digit'],
  ['slug too short', 'https://www.linkedin.com/in/ab', 'the profile slug must be at least 3 characters'],
  ['slug too long', `https://www.linkedin.com/in/${'a'.repeat(101)}`, 'the profile slug must be at most 100 characters'],
  [
    'malformed percent',
    'https://www.linkedin.com/in/jane%2',
    'the profile slug has a malformed percent-encoding (% must be followed by two hex digits)',
  ],
  ['percent not UTF-8', 'https://www.linkedin.com/in/jan%E9', 'the profile slug’s percent-encoding is not valid UTF-8'],
  ['leading space', ' https://www.linkedin.com/in/jane-doe', WHITESPACE],
  ['trailing newline', 'https://www.linkedin.com/in/jane-doe\n', WHITESPACE],
  ['inner tab', 'https://www.linkedin.com/in/jane\tdoe', WHITESPACE],
  ['non-breaking space', 'https://www.linkedin.com/in/jane\u00a0doe', WHITESPACE],
  ['backslashes', 'https://www.linkedin.com\\in\\jane-doe', `must not contain a backslash; it ${SHAPE}`],
  ['overlong', `https://www.linkedin.com/in/${'a'.repeat(2100)}`, 'must be at most 2048 characters'],
];

describe('prospect_url: accepted forms and their canonical URL', () => {
  it.each(valid)('%s', (_name, input, canonical) => {
    expect(checkProspectUrl(input)).toEqual({ ok: true, url: canonical, slug: canonical.slice(CANONICAL_PROFILE_PREFIX.length) });
    expect(ProspectUrl.parse(input)).toBe(canonical);
  });

  it('a canonical URL is its own canonical form (checking twice changes nothing)', () => {
    for (const [, input] of valid) {
      const once = ProspectUrl.parse(input);
      expect(ProspectUrl.parse(once)).toBe(once);
    }
  });
});

describe('prospect_url: refused forms name the rule they break', () => {
  it.each(invalid)('%s', (_name, input, message) => {
    expect(checkProspectUrl(input)).toEqual({ ok: false, error: message });
    const parsed = ProspectUrl.safeParse(input);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe(message);
  });

  it('a value that is not a string is refused as such', () => {
    expect(ProspectUrl.safeParse(42).error?.issues[0]?.message).toBe('must be a string');
  });

  it('the table is at least 30 rows', () => {
    expect(valid.length + invalid.length).toBeGreaterThanOrEqual(30);
  });
});
