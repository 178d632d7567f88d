import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { signWebhook, verifyWebhook, WebhookVerificationError } from '@sightline/webhook-verify';
import { describe, expect, it } from 'vitest';
import vectors from '../packages/webhook-verify/vectors.json' with { type: 'json' };
import { REPO_ROOT } from './support/process.ts';

const exec = promisify(execFile);

function headersFor(v: { timestamp: string; signature: string; body: string }) {
  return {
    'x-service-timestamp': v.timestamp,
    'x-service-signature': v.signature,
    'x-service-event': (JSON.parse(v.body) as { event: string }).event,
  };
}
const at = (v: { timestamp: string }) => ({ now: () => Number(v.timestamp) + 1000 });

describe('@sightline/webhook-verify', () => {
  it.each(vectors.map((v) => [v.secret, v] as const))('verifies the shipped vector signed with %s', async (_s, v) => {
    const event = await verifyWebhook(v.body, headersFor(v), v.secret, at(v));
    expect(event.event).toBe((JSON.parse(v.body) as { event: string }).event);
    expect(await signWebhook(v.secret, Number(v.timestamp), v.body)).toBe(v.signature);
  });

  const v = vectors[0] ?? { secret: '', timestamp: '0', body: '', signature: '' };

  it('accepts bytes and a Headers object as well as strings and plain records', async () => {
    const headers = new Headers(headersFor(v));
    await expect(verifyWebhook(new TextEncoder().encode(v.body), headers, v.secret, at(v))).resolves.toBeDefined();
  });

  it('accepts any of several secrets (rotation)', async () => {
    await expect(verifyWebhook(v.body, headersFor(v), ['old-secret-000', v.secret], at(v))).resolves.toBeDefined();
  });

  it.each([
    ['a wrong secret', () => verifyWebhook(v.body, headersFor(v), 'not-the-secret', at(v)), /signature does not match/],
    ['a tampered body', () => verifyWebhook(v.body.replace('child', 'chile'), headersFor(v), v.secret, at(v)), /signature does not match/],
    [
      'a re-serialised body',
      () => verifyWebhook(JSON.stringify(JSON.parse(v.body), null, 1), headersFor(v), v.secret, at(v)),
      /signature does not match/,
    ],
    [
      'a timestamp in seconds',
      () => verifyWebhook(v.body, { ...headersFor(v), 'x-service-timestamp': v.timestamp.slice(0, 10) }, v.secret, at(v)),
      /10 digits \(seconds\)/,
    ],
    ['an old timestamp', () => verifyWebhook(v.body, headersFor(v), v.secret, { now: () => Number(v.timestamp) + 301_000 }), /old/],
    ['a future timestamp', () => verifyWebhook(v.body, headersFor(v), v.secret, { now: () => Number(v.timestamp) - 301_000 }), /future/],
    ['a missing signature', () => verifyWebhook(v.body, { 'x-service-timestamp': v.timestamp }, v.secret, at(v)), /missing X-Service-Signature/],
    [
      'an event header that disagrees with the body',
      () => verifyWebhook(v.body, { ...headersFor(v), 'x-service-event': 'child.released' }, v.secret, at(v)),
      /does not match the body/,
    ],
  ])('refuses %s with a reason', async (_l, run, message) => {
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect((err as Error).message).toMatch(message);
  });

  it('runs unchanged under Deno', async () => {
    const script = `
      import { verifyWebhook } from './packages/webhook-verify/src/index.ts';
      const v = JSON.parse(await Deno.readTextFile('./packages/webhook-verify/vectors.json'))[0];
      const e = await verifyWebhook(v.body, { 'x-service-timestamp': v.timestamp, 'x-service-signature': v.signature },
        v.secret, { now: () => Number(v.timestamp) });
      console.log(e.event);`;
    const { stdout } = await exec(`${REPO_ROOT}node_modules/.bin/deno`, ['eval', '--ext=ts', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: '1' },
    });
    expect(stdout.trim()).toBe('child.created');
  });
});
