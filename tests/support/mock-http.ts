import type { RequestHandler } from 'msw';
import { type SetupServerApi, setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll } from 'vitest';

/**
 * The outside services a suite talks to, mocked in-process (msw): listening while the file's tests
 * run, a request no handler answers an error. After each test the handlers a test added are dropped
 * and each list in `clear` (what the handlers recorded) emptied, so a test sees only its own requests.
 */
export function mockHttpServer({ clear = [] }: { clear?: unknown[][] }, ...handlers: RequestHandler[]): SetupServerApi {
  const server = setupServer(...handlers);
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterEach(() => {
    server.resetHandlers();
    for (const list of clear) list.length = 0;
  });
  afterAll(() => server.close());
  return server;
}

/** A provider call's signal: long enough never to be what a test measures (the timeout tests pass their own). */
export const signal = () => AbortSignal.timeout(5_000);
