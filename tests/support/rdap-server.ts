import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { addressValue } from '@sightline/core/ip/rdap/address-range';

/**
 * A real RDAP server on 127.0.0.1 (RFC 7480: `GET {base}ip/{address}`), serving ip network objects
 * from a table: the most specific network holding the address, or 404. It counts the queries it
 * gets and, on demand, misbehaves the way registries and hostile servers do: 429/503 with
 * Retry-After, no answer at all, a redirect, a body of any bytes, an endless body. It also serves
 * bootstrap files (`{base}ipv4.json`, `{base}ipv6.json`) when given them.
 */
export type Misbehaviour =
  | { kind: 'throttle'; status?: 429 | 503; retryAfter?: string }
  | { kind: 'hang' }
  | { kind: 'redirect'; location: string }
  | { kind: 'raw'; body: string; status?: number }
  /** `bytes` of a valid-looking JSON answer, written as the client reads it. */
  | { kind: 'endless'; bytes: number };

interface Network {
  version: 4 | 6;
  start: bigint;
  end: bigint;
  body: Record<string, unknown>;
}

export interface RdapTestServer {
  /** The base URL, ending in `/`. */
  url: string;
  origin: string;
  /** The addresses queried, in order. */
  queries: string[];
  /** Queries for addresses `match` accepts. */
  count(match?: (address: string) => boolean): number;
  /** Serves `body` (an ip network object: its startAddress and endAddress place it). */
  add(body: Record<string, unknown>): void;
  /** The next query matching `match` misbehaves (once, or `times` times). */
  misbehave(match: (address: string) => boolean, how: Misbehaviour, times?: number): void;
  /** Bytes written by `endless` answers before the client stopped reading. */
  endlessBytesWritten: number;
  files: Map<string, unknown>;
  /** Requests for `files`. */
  fileRequests: number;
  close(): Promise<void>;
}

export async function startRdapServer(basePath = '/rdap/'): Promise<RdapTestServer> {
  const networks: Network[] = [];
  const queries: string[] = [];
  const plans: { match: (a: string) => boolean; how: Misbehaviour; times: number }[] = [];
  const files = new Map<string, unknown>();
  const state = { endlessBytesWritten: 0, fileRequests: 0 };

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (!path.startsWith(basePath)) return notFound(res);
    const rest = path.slice(basePath.length);
    if (files.has(rest)) {
      state.fileRequests++;
      return json(res, 200, files.get(rest));
    }
    if (!rest.startsWith('ip/')) return notFound(res);
    const address = decodeURIComponent(rest.slice(3));
    queries.push(address);
    const plan = plans.find((p) => p.times > 0 && p.match(address));
    if (plan) {
      plan.times--;
      return misbehave(res, plan.how, state);
    }
    const value = addressValue(address);
    let best: Network | undefined;
    for (const n of networks) {
      if (!value || n.version !== value.version || value.value < n.start || value.value > n.end) continue;
      if (!best || n.end - n.start < best.end - best.start) best = n;
    }
    if (!best) return json(res, 404, { errorCode: 404, title: 'Not Found' });
    json(res, 200, best.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}${basePath}`,
    origin,
    queries,
    count: (match = () => true) => queries.filter(match).length,
    add(body) {
      const start = addressValue(String(body.startAddress));
      const end = addressValue(String(body.endAddress));
      if (!start || !end) throw new Error('a network needs startAddress and endAddress');
      networks.push({ version: start.version, start: start.value, end: end.value, body });
    },
    misbehave(match, how, times = 1) {
      plans.push({ match, how, times });
    },
    get endlessBytesWritten() {
      return state.endlessBytesWritten;
    },
    files,
    get fileRequests() {
      return state.fileRequests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/rdap+json' });
  res.end(JSON.stringify(body));
}

function notFound(res: http.ServerResponse): void {
  res.writeHead(404).end();
}

function misbehave(res: http.ServerResponse, how: Misbehaviour, state: { endlessBytesWritten: number }): void {
  switch (how.kind) {
    case 'throttle':
      res.writeHead(how.status ?? 429, how.retryAfter === undefined ? {} : { 'retry-after': how.retryAfter });
      res.end();
      return;
    case 'hang':
      return; // never answers; close() ends the connection
    case 'redirect':
      res.writeHead(302, { location: how.location }).end();
      return;
    case 'raw':
      res.writeHead(how.status ?? 200, { 'content-type': 'application/rdap+json' });
      res.end(how.body);
      return;
    case 'endless': {
      res.writeHead(200, { 'content-type': 'application/rdap+json' });
      const chunk = `"${'x'.repeat(16 * 1024 - 3)}",`;
      let left = how.bytes;
      res.write('{"objectClassName":"ip network","remarks":[');
      // Written as the client reads (backpressure): what was written is what the client took.
      const pump = () => {
        while (left > 0) {
          left -= chunk.length;
          state.endlessBytesWritten += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('"end"]}');
      };
      res.on('close', () => {
        left = 0;
      });
      pump();
      return;
    }
  }
}
