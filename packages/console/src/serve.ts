import { CONSOLE_CSS, CONSOLE_JS } from './assets.generated.ts';

/**
 * The console as a host serves it at /console/: index.html, app.js and app.css, the last two the
 * committed build (assets.generated.ts). Runtime-free (Web APIs only), so any host can mount it.
 *
 * The CSP allows only the console's own script and stylesheet and calls to its own origin: no
 * inline script or style, no CDN, no framing, no form posts. A key typed into the page can leave
 * it only in a fetch to the API. Images may come from any https origin: a partner's logo.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' https:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** A short digest of a text (FNV-1a), so a new build's files are fetched anew. */
function version(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The page: the API's base URL in a meta tag (the one setting), the script and stylesheet beside it. */
export function consoleHtml(opts: { apiBase: string; js: string; css: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="sightline-api" content="${escapeAttr(opts.apiBase)}">
<title>Sightline console</title><link rel="stylesheet" href="app.css?v=${version(opts.css)}">
<script defer src="app.js?v=${version(opts.js)}"></script></head>
<body><div id="app"><noscript>The console needs JavaScript.</noscript></div></body></html>
`;
}

const SECURITY_HEADERS = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  // Cached, but asked again each time: a new deployment is seen at once.
  'Cache-Control': 'no-cache',
};

interface Asset {
  type: string;
  body: string;
  gzip?: Promise<ArrayBuffer>;
}

let assets: Map<string, Asset> | undefined;

function assetsFor(apiBase: string): Map<string, Asset> {
  assets ??= new Map([
    ['', { type: 'text/html; charset=utf-8', body: consoleHtml({ apiBase, js: CONSOLE_JS, css: CONSOLE_CSS }) }],
    ['index.html', { type: 'text/html; charset=utf-8', body: consoleHtml({ apiBase, js: CONSOLE_JS, css: CONSOLE_CSS }) }],
    ['app.js', { type: 'text/javascript; charset=utf-8', body: CONSOLE_JS }],
    ['app.css', { type: 'text/css; charset=utf-8', body: CONSOLE_CSS }],
  ]);
  return assets;
}

const gzip = (text: string) => new Response(new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();

/**
 * The answer to GET `/console/<file>` (`file` without the prefix; '' for the page), gzipped when
 * the client accepts it (compressed once per process), or undefined for a file the console lacks.
 */
export async function serveConsole(file: string, opts: { apiBase: string; acceptEncoding?: string | null }): Promise<Response | undefined> {
  const asset = assetsFor(opts.apiBase).get(file);
  if (!asset) return undefined;
  const headers: Record<string, string> = { ...SECURITY_HEADERS, 'Content-Type': asset.type, Vary: 'Accept-Encoding' };
  if (/\bgzip\b/.test(opts.acceptEncoding ?? '')) {
    asset.gzip ??= gzip(asset.body);
    return new Response(await asset.gzip, { headers: { ...headers, 'Content-Encoding': 'gzip' } });
  }
  return new Response(asset.body, { headers });
}
