import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createNodeServer, type NodeServerOptions } from '@sightline/host';

/** The system's Chromium, which the browser suites drive (playwright-core brings none). */
export const CHROMIUM = '/usr/bin/chromium';

/** Whether `suite` can run: where the machine has no Chromium it is skipped, and says so. */
export function chromiumFor(suite: string): boolean {
  const have = existsSync(CHROMIUM);
  if (!have) console.warn(`${suite}: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  return have;
}

/** The Node host over real HTTP on 127.0.0.1, on a free port, as a browser reaches it. */
export interface LoopbackHost {
  port: number;
  /** Also ends the connections a browser keeps alive, which would hold the close open. */
  close(): Promise<void>;
}

export async function startLoopbackHost(opts: NodeServerOptions): Promise<LoopbackHost> {
  const server = createNodeServer(opts);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
