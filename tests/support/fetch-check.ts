import { checkDocumentedResponse } from './openapi-check.ts';

/**
 * Every answer a test fetches from a server this suite started on this machine (`npm start`,
 * `npm run serve`, the Deno functions, the Supabase gateway) is held to docs/openapi.json, as the
 * in-process app's are (support/app.ts). A vitest setup file: it wraps the global fetch of each test
 * file's worker. Third parties (msw) and our own webhook receivers answer on paths the document does
 * not describe, so the check leaves them alone.
 */
const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);
const unchecked = globalThis.fetch;

globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const res = await unchecked(input, init);
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (LOCAL.has(url.hostname)) {
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    await checkDocumentedResponse(url.href, method, res, { gateway: !url.pathname.startsWith('/functions/v1/') });
  }
  return res;
};
