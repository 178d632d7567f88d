/**
 * Sightline's tracker, as the browser runs it (built into one minified IIFE by build.ts; the
 * served file must stay within 1.5 KB gzipped, so every feature here is paid for in bytes).
 *
 * - Sends page views (on load, on SPA navigations that change the path, on a back/forward-cache
 *   restore) and engaged time to the collect endpoint: the origin the script was loaded from plus
 *   the path the server injected, unless `data-api` on the tag names another endpoint.
 * - Engaged time accrues only while the page is visible, the window has focus and the visitor gave
 *   input in the last 30 s (arriving on a page counts as input). It is sent as deltas of at least
 *   3 s (so at most one beacon per 3 s of new time), each with a fresh beacon id, when the page is
 *   hidden, loses focus or is left, and before each SPA page view. A remainder under 3 s when the
 *   page goes away is dropped rather than sent as a beacon of its own.
 * - No cookies: a per-tab session id in sessionStorage, renewed after 30 idle minutes.
 * - Sends nothing under Do Not Track or Global Privacy Control, nor under automation
 *   (`navigator.webdriver`) unless the page opts in for its own tests (`data-allow-automation`, or
 *   `localStorage.sightline_allow_automation = '1'`); then every event says `webdriver: true`, so
 *   the server records a bot and never charges for it.
 * - `data-consent="required"`: events wait (at most 20) until `sightline.grant()`;
 *   `sightline.revoke()` drops them and stops sending. `sightline.status()` says which applies.
 * - Reads no form field, no cookie, nothing but the URL, the referrer and the activity signals.
 */

/** Filled in by the server: `i` the tracking id (per-site file only), `a` the collect path. */
declare const __SIGHTLINE_CONFIG__: { i?: string; a: string };

type ConsentState = 'granted' | 'pending' | 'denied' | 'off';
type SightlineWindow = Window & { sightline?: { grant(): void; revoke(): void; status(): ConsentState } };

const IDLE_MS = 30 * 60_000;
const ENGAGED_WINDOW_MS = 30_000;
const MIN_BEACON_MS = 3_000;
const MAX_BEACON_MS = 30 * 60_000;
const SESSION_KEY = 'sightline_session';

const config = __SIGHTLINE_CONFIG__;
const doc = document;
const nav = navigator as Navigator & { globalPrivacyControl?: boolean };
const tag = doc.currentScript as HTMLScriptElement | null;
const data = (name: string) => tag?.getAttribute(`data-${name}`);
const id = config.i || data('id');

/** The site's own tests may run under automation; the server then stores the events as a bot's. */
function automationAllowed(): boolean {
  try {
    return data('allow-automation') != null || localStorage.getItem('sightline_allow_automation') === '1';
  } catch {
    return false;
  }
}

let state: ConsentState =
  !tag || !id || nav.doNotTrack === '1' || nav.globalPrivacyControl === true || (nav.webdriver && !automationAllowed())
    ? 'off'
    : data('consent') === 'required'
      ? 'pending'
      : 'granted';
const queue: string[] = [];

(window as SightlineWindow).sightline = {
  grant() {
    if (state !== 'off') {
      state = 'granted';
      queue.splice(0).forEach(post);
    }
  },
  revoke() {
    if (state !== 'off') state = 'denied';
    queue.length = 0;
  },
  status: () => state,
};

// An inline copy of the script has no src to take an origin from: then only data-api can say where.
const endpoint = data('api') || (tag?.src && new URL(config.a, tag.src).href);
const random = () => Math.random().toString(36).slice(2);

/** A string body goes as text/plain;charset=UTF-8: no CORS preflight, and no cookies either way. */
function post(body: string) {
  if (endpoint) fetch(endpoint, { method: 'POST', body, keepalive: true, credentials: 'omit' }).catch(() => nav.sendBeacon(endpoint, body));
}

// The session as the tab last left it: "<id> <last activity ms>".
let stored = '';
try {
  stored = sessionStorage.getItem(SESSION_KEY) || '';
} catch {}
let [session, lastActivity] = stored.split(' ');
let activity = Number(lastActivity) || 0; // never NaN: it bounds engaged time, and NaN would poison the sum
let path = ''; // the path of the page last counted
let page = ''; // its URL, which its engaged time is reported under
let engaged = 0; // engaged ms not yet sent
let mark = Date.now(); // engaged time is accounted up to here
let active = false; // visible and focused, as of `mark`

/** Nothing is stored on the device before consent: the session lives in memory until then. */
function save() {
  try {
    if (state === 'granted' && session) sessionStorage.setItem(SESSION_KEY, `${session} ${activity}`);
  } catch {}
}

function send(type: string, extra: object) {
  if (state === 'off' || state === 'denied') return;
  const body = JSON.stringify({ tracking_script_id: id, type, url: page, session_id: session, webdriver: nav.webdriver || undefined, ...extra });
  if (state === 'granted') post(body);
  else if (queue.length < 20) queue.push(body);
  save();
}

/** Accounts the time since `mark` under the state that held during it, then reads the state anew. */
function tick() {
  const now = Date.now();
  if (active) engaged += Math.max(0, Math.min(now, activity + ENGAGED_WINDOW_MS) - mark);
  mark = now;
  active = doc.visibilityState === 'visible' && doc.hasFocus();
}

function flush() {
  tick();
  const ms = Math.min(engaged, MAX_BEACON_MS);
  if (ms >= MIN_BEACON_MS) {
    engaged -= ms;
    send('engagement', { active_ms: ms, beacon_id: random() });
  }
  save();
}

/** Input (or a navigation): after 30 idle minutes the tab starts a new session, its old time sent first. */
function touch() {
  tick();
  if (!(mark - activity <= IDLE_MS) || !session) {
    flush();
    session = random() + random();
  }
  activity = mark;
}

/** A page view, when the path changed: history changes that keep the path (a query, a hash) are not pages. */
function view() {
  if (location.pathname === path) return;
  flush();
  touch();
  path = location.pathname;
  page = location.href.slice(0, 2048);
  send('pageview', { referrer: doc.referrer.slice(0, 2048) || undefined });
}

if (state !== 'off') {
  for (const method of ['pushState', 'replaceState'] as const) {
    const original = history[method];
    history[method] = function (this: History, ...args: Parameters<History['pushState']>) {
      original.apply(this, args);
      view();
    };
  }
  const on = (target: EventTarget, type: string, listener: (e: Event) => void) => target.addEventListener(type, listener, true);
  on(window, 'popstate', view);
  on(window, 'pageshow', (e) => {
    if ((e as PageTransitionEvent).persisted) {
      path = '';
      view();
    }
  });
  on(window, 'focus', tick);
  on(window, 'blur', flush);
  on(window, 'pagehide', () => {
    flush();
    active = false;
  });
  on(doc, 'visibilitychange', () => (doc.visibilityState === 'hidden' ? flush() : tick()));
  for (const type of ['pointerdown', 'pointermove', 'keydown', 'scroll', 'touchstart']) on(doc, type, touch);
  view();
}
