import { AppError, findUnstorableText, isUnstorableText, sliceWhole } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { createChildVia, seedDirectAccount, seedPartner, uniqueDomain } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

/**
 * Postgres refuses NUL in text and cannot store an unpaired UTF-16 surrogate (it would keep U+FFFD
 * while the 201 echoed the original). Either is the caller's mistake: a 400 that changes nothing,
 * never a 500, in every text field of every route.
 */
let env: TestEnv;
let partnerKey = '';
let childId = '';

beforeAll(async () => {
  env = await createTestEnv();
  partnerKey = (await seedPartner(env.deps, { quota: 100 })).key;
  childId = (await createChildVia(env, partnerKey)).child.api_key_id;
});
afterAll(() => env.close());

const NUL = 'a\u0000b';
const LONE_HIGH = 'a\ud800b';
const LONE_LOW = 'a\udc00b';

describe('text Postgres cannot store', () => {
  it.each([
    ['create-child name with NUL', 'partner-create-child-key', () => ({ name: NUL, domain: uniqueDomain() }), /^name: must not contain NUL/],
    [
      'create-child brand_name with a lone surrogate',
      'partner-create-child-key',
      () => ({ name: 'x', domain: uniqueDomain(), brand_name: LONE_HIGH }),
      /^brand_name: /,
    ],
    [
      'create-child domain with a lone low surrogate',
      'partner-create-child-key',
      () => ({ name: 'x', domain: `${LONE_LOW}.example.com` }),
      /^domain: /,
    ],
    ['update-child name with NUL', 'partner-update-child', () => ({ child_api_key_id: childId, name: NUL }), /^name: /],
    ['set-webhook secret with NUL', 'partner-set-webhook', () => ({ url: null, secret: `secret${NUL}x` }), /^secret: /],
  ])('%s is a 400 that changes nothing', async (_label, name, body, message) => {
    const before = await snapshot(env.db);
    const res = await call(env, name, { key: partnerKey, body: body() });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: expect.stringMatching(message), code: 'invalid_request' });
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('adopt with a NUL name is a 400, not a 500', async () => {
    const direct = await seedDirectAccount(env.deps);
    const res = await call(env, 'partner-adopt-existing-key', { key: partnerKey, body: { api_key_id: direct.api_key_id, name: NUL } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^name: /);
  });

  it('a NUL in a query parameter is a 400 naming it (partner-list-events?event=%00)', async () => {
    const res = await env.app.request('http://localhost/functions/v1/partner-list-events?event=%00', { headers: { 'x-access-key': partnerKey } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^event: must not contain NUL/);
  });

  it('a NUL in an object key is refused too', async () => {
    const res = await call(env, 'partner-create-child-key', {
      key: partnerKey,
      rawBody: '{"name":"x","domain":"d.example.com","\\u0000":1}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/must not contain NUL/);
  });

  it('paired surrogates (emoji) and other control characters are stored and echoed as sent', async () => {
    const name = 'Café 🚀 tab\there';
    const created = await createChildVia(env, partnerKey, { name, brand_name: '🚀' });
    const res = await call(env, 'partner-list-children', { key: partnerKey });
    const children = res.body.children as { child_api_key_id: string; name: string }[];
    expect(children.find((c) => c.child_api_key_id === created.child.api_key_id)?.name).toBe(name);
  });
});

describe('operator commands', () => {
  it('refuse a NUL in a flag with a 400 that changes nothing', async () => {
    const before = await snapshot(env.db);
    const err = await runOperatorCommand(env.deps, 'create-partner', { name: NUL }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    expect((err as AppError).message).toMatch(/--name must not contain NUL/);
    expect(await snapshot(env.db)).toEqual(before);
  });
});

describe('findUnstorableText', () => {
  it('names the path of the first offending string or key', () => {
    expect(findUnstorableText({ a: 'ok', b: ['x', { c: NUL }] })).toBe('b.1.c');
    expect(findUnstorableText({ [LONE_HIGH]: 1 })).toBe(LONE_HIGH);
    expect(findUnstorableText(LONE_LOW)).toBe('body');
    expect(findUnstorableText({ ok: '\ud83d\ude80', n: 1, t: true, z: null })).toBeUndefined();
    // A high half at the very end, and a low half at the very start, are both unpaired.
    expect(findUnstorableText('x\ud83d')).toBe('body');
    expect(findUnstorableText('\ude80x')).toBe('body');
  });

  it('text shortened for storing is cut between characters, never through a surrogate pair', () => {
    const rocket = '\ud83d\ude80';
    expect(sliceWhole(`ab${rocket}`, 3)).toBe('ab');
    expect(sliceWhole(`ab${rocket}`, 4)).toBe(`ab${rocket}`);
    expect(sliceWhole('abc', 2)).toBe('ab');
    expect(sliceWhole('abc', -1)).toBe('');
    for (let end = 0; end <= 12; end++) expect(isUnstorableText(sliceWhole(rocket.repeat(6), end))).toBe(false);
  });
});

describe('a body nested deeper than the call stack', () => {
  it('is walked without overflowing: 30,000 levels of brackets is an ordinary 400 from the schema, not a 500', async () => {
    const deep = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
    expect(findUnstorableText(JSON.parse(deep))).toBeUndefined();
    expect(findUnstorableText(JSON.parse(`${'['.repeat(30_000)}"a\\u0000"${']'.repeat(30_000)}`))).toMatch(/^0(\.0)+$/);
    const res = await call(env, 'partner-create-child-key', {
      key: partnerKey,
      rawBody: `{"name":${deep}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
  });
});
