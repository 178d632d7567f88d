import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { refusedAddressReason, type DestinationPolicy, type WebhookTransport } from '@sightline/core';
import { Agent } from 'undici';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Node's webhook transport: the global fetch (so msw can intercept third parties in tests) with an
 * undici Agent whose DNS lookup refuses forbidden addresses at connect time — closing the
 * DNS-rebinding gap — and no redirects followed. IP-literal hosts never reach the lookup, so they
 * are checked before connecting.
 */
export function createNodeWebhookTransport(policy: DestinationPolicy): WebhookTransport & { close(): Promise<void> } {
  const guardedLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const a of addresses) {
        const refused = refusedAddressReason(a.address, policy);
        if (refused) {
          const e: NodeJS.ErrnoException = new Error(`refused to connect to ${hostname}: ${refused}`);
          e.code = 'EFORBIDDENADDRESS';
          return callback(e, []);
        }
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      return callback(null, first.address, first.family);
    });
  };
  const agent = new Agent({
    connect: { lookup: guardedLookup as never, timeout: 10_000 },
    keepAliveTimeout: 10_000,
    connections: 64,
  });
  return {
    async request(url, init) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      const refused = refusedAddressReason(host, policy);
      if (refused) throw new Error(`refused to connect: ${refused}`);
      const res = await fetch(url, {
        method: init.method,
        headers: init.headers,
        body: init.body ?? null,
        redirect: 'manual',
        signal: AbortSignal.timeout(init.timeoutMs),
        dispatcher: agent,
      } as RequestInit);
      // Drain so the connection returns to the pool.
      await res.arrayBuffer().catch(() => undefined);
      return { status: res.status };
    },
    close: () => agent.close(),
  };
}
