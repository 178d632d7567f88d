import { z } from '@hono/zod-openapi';
import { TRACKER_SCRIPT_HEAD, TRACKER_SCRIPT_TAIL } from './script.generated.ts';

/**
 * Where the tracker sends its beacons, as a path on the origin it was loaded from. The same on the
 * Node host (`/functions/v1` is its functions prefix) and behind the Supabase gateway (which serves
 * every function under `/functions/v1/`), so the script can be told one path whoever serves it.
 */
export const COLLECT_PATH = '/functions/v1/collect';

/** The generic file: it reads `data-id` (and `data-api`) from its own script tag. */
export const GENERIC_TRACKER_FILE = 'tracker.js';

/**
 * A browser keeps the script a day, then revalidates with the ETag (a 304 without a body), so a
 * tracker fix reaches every visitor within a day at the cost of one small request per day each.
 */
export const TRACKER_CACHE_CONTROL = 'public, max-age=86400';

const PER_SITE_FILE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.js$/i;

/** The script's file name: `<tracking_script_id>.js` (configured by the server) or `tracker.js` (generic). */
export const TrackerScriptFile = z
  .string()
  .refine((f) => f === GENERIC_TRACKER_FILE || PER_SITE_FILE.test(f), 'must be tracker.js or <tracking_script_id>.js')
  .openapi({ example: '6f1c1c84-8a1e-4a4e-9d0e-3c1c2f9a7b10.js' });

export interface TrackerScriptConfig {
  /** The per-site file's tracking id; absent in the generic file. */
  trackingScriptId?: string;
  collectPath: string;
}

/** Characters that are fine in JSON but not inside an HTML `<script>` or an old JavaScript parser. */
const UNSAFE_IN_SCRIPT = /[<>&\u2028\u2029]/g;

/**
 * The script with its configuration in place. The configuration is JSON with `<`, `>`, `&`, U+2028
 * and U+2029 escaped, so no value can end the expression, the script element or the line: whatever
 * an id or a path contains, it arrives in the browser as that string and nothing else.
 */
export function renderTrackerScript(config: TrackerScriptConfig): string {
  const json = JSON.stringify({ i: config.trackingScriptId, a: config.collectPath }).replace(
    UNSAFE_IN_SCRIPT,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${TRACKER_SCRIPT_HEAD}${json}${TRACKER_SCRIPT_TAIL}`;
}

export interface ServeTrackerScriptInput {
  /** A file name TrackerScriptFile accepted. */
  file: string;
  /** The request's If-None-Match, if any. */
  ifNoneMatch?: string | undefined;
}

/** The script, or a 304 without a body. */
export type TrackerScriptAnswer = { status: 200; body: string; headers: Record<string, string> } | { status: 304; headers: Record<string, string> };

/** A strong validator: a digest of the exact bytes served (128 bits of SHA-256). */
async function etagOf(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of digest.subarray(0, 16)) hex += byte.toString(16).padStart(2, '0');
  return `"${hex}"`;
}

/** If-None-Match compares weakly (RFC 9110 §13.1.2): `W/"x"` matches `"x"`, and `*` matches anything. */
function matchesAny(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * The tracker script for a file name: the per-site file has the tracking id and the collect path
 * filled in; the generic one only the path. Any well-formed id gets its file, known or not, so the
 * script URL cannot be used to learn which sites exist (collect drops events for unknown ids).
 * It needs no context: nothing is looked up. A request whose If-None-Match names the current ETag
 * is answered 304 without a body.
 */
export async function serveTrackerScript({ input }: { input: ServeTrackerScriptInput }): Promise<TrackerScriptAnswer> {
  const id = PER_SITE_FILE.exec(input.file)?.[1]?.toLowerCase();
  const script = renderTrackerScript({ ...(id ? { trackingScriptId: id } : {}), collectPath: COLLECT_PATH });
  const etag = await etagOf(script);
  const cache = { ETag: etag, 'Cache-Control': TRACKER_CACHE_CONTROL };
  if (matchesAny(input.ifNoneMatch, etag)) return { status: 304, headers: cache };
  return {
    status: 200,
    body: script,
    headers: {
      ...cache,
      'Content-Type': 'application/javascript; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
      // A page isolated with Cross-Origin-Embedder-Policy: require-corp may still load it.
      'Cross-Origin-Resource-Policy': 'cross-origin',
    },
  };
}
