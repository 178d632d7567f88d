import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The one thing the Supabase API gateway does to a function call that matters to us: clients
 * address `<project>/functions/v1/<name>`, and the function receives `/<name>` (the prefix is
 * stripped; supabase/functions/_shared/host.ts mounts functions at `/<name>` for that reason).
 * This stands in for it on 127.0.0.1 in front of a Deno-served function, passing method, headers,
 * query and body bytes through untouched, so supabase-js can be pointed at a Deno function with
 * the URL it builds for a real project. With verify_jwt = false (supabase/config.toml) the real
 * gateway checks no JWT, so neither does this.
 */
export const FUNCTIONS_PATH = '/functions/v1';

export interface Gateway {
  /** What createClient takes as the project URL. */
  url: string;
  /** The paths the upstream was asked for, in order. */
  forwarded: string[];
  close(): Promise<void>;
}

export async function startSupabaseGateway(upstreamOrigin: string): Promise<Gateway> {
  const upstream = new URL(upstreamOrigin);
  const forwarded: string[] = [];
  const server = http.createServer((req, res) => {
    const target = req.url ?? '/';
    if (!target.startsWith(`${FUNCTIONS_PATH}/`)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'no route matched' }));
      return;
    }
    const path = target.slice(FUNCTIONS_PATH.length);
    forwarded.push(path);
    const headers = { ...req.headers };
    delete headers.host;
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `upstream failed: ${err.message}` }));
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
