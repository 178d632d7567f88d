import { createDirectAccount, createDirectKey, createPartner, type CoreDeps } from '@sightline/core';

let counter = 0;
/** A unique, valid tracker domain for this test run. */
export const uniqueDomain = (label = 'site') => `${label}-${process.pid}-${Date.now().toString(36)}-${++counter}.example.com`;

export async function seedPartner(
  deps: CoreDeps,
  opts: Partial<{ name: string; billing: 'prepaid' | 'invoice_monthly'; quota: number; topup: number; perIdPence: number; card: string }> = {},
) {
  return createPartner({
    ctx: deps,
    input: { name: opts.name ?? 'Partner', quota: opts.quota ?? 100, topup: opts.topup ?? 0, ...opts },
  });
}

export async function seedDirectAccount(deps: CoreDeps, name = 'Direct') {
  return createDirectAccount({ ctx: deps, input: { name, domain: uniqueDomain('direct') } });
}

export async function seedDirectKey(deps: CoreDeps, accountId: string) {
  return createDirectKey({ ctx: deps, input: { accountId, domain: uniqueDomain('own') } });
}
