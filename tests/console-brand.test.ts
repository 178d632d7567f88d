import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedPartnerWithChild } from './support/seed.ts';

/**
 * The console's white label: a partner sets its brand (partner-set-brand) and each of its children's
 * keys reads the partner's accent and logo under the child's own brand_name (console-brand); no
 * other partner's child sees it.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const BRAND = { brand_name: 'Agency One', accent_color: '#7a1fa2', logo_url: 'https://agency-one.example.com/logo.png' };

describe('the console brand', () => {
  it('a child sees its partner’s accent and logo under its own brand_name; another partner’s child does not', async () => {
    const { partner, created } = await seedPartnerWithChild(env, { quota: 100 }, { name: 'Shop', brand_name: 'Shop Insights' });
    const other = await seedPartnerWithChild(env, { quota: 100 }, { name: 'Elsewhere' });
    const set = await call(env, 'partner-set-brand', { key: partner.key, body: BRAND });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ success: true, brand: BRAND });

    expect((await call(env, 'console-brand', { key: partner.key })).body).toEqual({ success: true, brand: BRAND });
    expect((await call(env, 'console-brand', { key: created.child.key })).body).toEqual({
      success: true,
      brand: { ...BRAND, brand_name: 'Shop Insights' },
    });
    // The other partner set no brand: its child shows its own name, and no accent or logo of anyone's.
    expect((await call(env, 'console-brand', { key: other.created.child.key })).body).toEqual({
      success: true,
      brand: { brand_name: 'Elsewhere', accent_color: null, logo_url: null },
    });
  });

  it('a field omitted stays, null clears it', async () => {
    const { partner } = await seedPartnerWithChild(env, { quota: 100 });
    await call(env, 'partner-set-brand', { key: partner.key, body: BRAND });
    const cleared = await call(env, 'partner-set-brand', { key: partner.key, body: { logo_url: null } });
    expect(cleared.body).toEqual({ success: true, brand: { ...BRAND, logo_url: null } });
  });

  it('a colour that is not #rrggbb or too light to read, a logo that is not https, an unknown field: 400 naming it, nothing changed', async () => {
    const { partner } = await seedPartnerWithChild(env, { quota: 100 });
    await call(env, 'partner-set-brand', { key: partner.key, body: BRAND });
    for (const [body, field] of [
      [{ accent_color: 'purple' }, 'accent_color'],
      // Too light to read on white or under white text (about 2.1:1 and 1.1:1).
      [{ accent_color: '#ff9900' }, 'accent_color'],
      [{ accent_color: '#f5f5f5' }, 'accent_color'],
      [{ logo_url: 'http://agency-one.example.com/logo.png' }, 'logo_url'],
      [{ logo_url: 'javascript:alert(1)' }, 'logo_url'],
      [{ brand_name: '' }, 'brand_name'],
      [{ colour: '#000000' }, 'colour'],
    ] as const) {
      const res = await call(env, 'partner-set-brand', { key: partner.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(String(res.body.error)).toContain(field);
    }
    expect((await call(env, 'console-brand', { key: partner.key })).body).toEqual({ success: true, brand: BRAND });
  });

  it('only a partner’s master key sets a brand', async () => {
    const { created } = await seedPartnerWithChild(env, { quota: 100 });
    expect((await call(env, 'partner-set-brand', { key: created.child.key, body: BRAND })).status).toBe(403);
  });
});
