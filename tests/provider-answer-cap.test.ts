import { readBodyPrefix } from '@sightline/core';
import { PROVIDER_ANSWER_MAX_BYTES } from '@sightline/core/ip/providers/http';
import { createIpinfoProvider } from '@sightline/core/ip/providers/ipinfo';
import { queryProviders } from '@sightline/core/ip/providers/run';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { mockHttpServer, signal } from './support/mock-http.ts';

/*
 * A paid provider (a third party, so msw) that answers with far more than any documented answer:
 * we read at most a capped prefix of it and fail that provider, never the lookup.
 */

const MiB = 1024 * 1024;
const BIG = 32 * MiB;
const IP = '198.51.100.10';

/**
 * `total` bytes made on demand — `text` padded with spaces, so only its size is wrong — counting
 * what the reader actually pulled.
 */
function hugeBody(text: string, total: number) {
  const head = new TextEncoder().encode(text);
  const pad = new Uint8Array(64 * 1024).fill(0x20);
  const pulled = { bytes: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled.bytes === 0) {
          pulled.bytes += head.byteLength;
          return controller.enqueue(head);
        }
        if (pulled.bytes >= total) return controller.close();
        pulled.bytes += pad.byteLength;
        controller.enqueue(pad);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled };
}

let served: { pulled: { bytes: number } } = { pulled: { bytes: 0 } };
mockHttpServer(
  {},
  http.get('https://huge.example/:status/:ip', ({ params }) => {
    const status = Number(params.status);
    // A valid answer but for its size; an error page in plain text.
    const body =
      status === 200
        ? hugeBody(JSON.stringify({ ip: params.ip, country: 'US', company: { name: 'Acme', domain: 'acme.com', type: 'business' } }), BIG)
        : hugeBody('upstream overloaded', BIG);
    served = body;
    return new HttpResponse(body.stream, { status, headers: { 'content-type': status === 200 ? 'application/json' : 'text/plain' } });
  }),
  http.get('https://small.example/:ip', ({ params }) =>
    HttpResponse.json({ ip: params.ip, country: 'DE', company: { name: 'Initech', domain: 'initech.de', type: 'business' } }),
  ),
);

const provider = (baseUrl: string) => createIpinfoProvider({ apiKey: 'k', baseUrl });
/** What the reader may pull past the cap: the chunk that crossed it, and one the stream queued. */
const SLACK = 2 * 64 * 1024;

describe('a paid provider answer is read up to a cap', () => {
  it('a 200 over 1 MiB fails that provider, having read no more than the cap', async () => {
    await expect(provider('https://huge.example/200').lookup(IP, signal())).rejects.toThrow(
      /ipinfo answered HTTP 200 with a body over 1048576 bytes/,
    );
    expect(served.pulled.bytes).toBeLessThanOrEqual(PROVIDER_ANSWER_MAX_BYTES + SLACK);
  });

  it('the oversized provider is one failure; the lookup still has the other answers', async () => {
    const run = await queryProviders([provider('https://huge.example/200'), { ...provider('https://small.example'), name: 'small' }], IP, {
      timeoutMs: 5_000,
    });
    expect(run.answers.map((a) => [a.provider, a.domain])).toEqual([['small', 'initech.de']]);
    expect(run.failures).toEqual([{ provider: 'ipinfo', error: expect.stringMatching(/body over 1048576 bytes/) }]);
  });

  it('an error answer gives a short detail from a small read', async () => {
    await expect(provider('https://huge.example/500').lookup(IP, signal())).rejects.toThrow(/^ipinfo answered HTTP 500: upstream overloaded$/);
    expect(served.pulled.bytes).toBeLessThanOrEqual(4 * 1024 + SLACK);
  });

  it('a 404 is still no answer, and its body is not read past a small cap', async () => {
    expect(await provider('https://huge.example/404').lookup(IP, signal())).toBeNull();
    expect(served.pulled.bytes).toBeLessThanOrEqual(4 * 1024 + SLACK);
  });
});

describe('readBodyPrefix', () => {
  const body = (text: string) => new Response(new Blob([text]).stream());
  it('a body of exactly the limit is complete; one byte more is not, and is cut at the limit', async () => {
    expect(await readBodyPrefix(body('abcd'), 4)).toEqual({ bytes: new TextEncoder().encode('abcd'), complete: true });
    expect(await readBodyPrefix(body('abcde'), 4)).toEqual({ bytes: new TextEncoder().encode('abcd'), complete: false });
  });

  it('no body (a HEAD, a 204) is an empty, complete body', async () => {
    expect(await readBodyPrefix(new Response(null, { status: 204 }), 4)).toEqual({ bytes: new Uint8Array(0), complete: true });
  });
});
