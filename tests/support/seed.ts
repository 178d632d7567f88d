import { type CoreDeps, createDirectAccount, createDirectKey, createPartner } from '@sightline/core';

let counter = 0;
/** A unique, valid tracker domain for this test run. */
export const uniqueDomain = (label = 'site') => `${label}-${process.pid}-${Date.now().toString(36)}-${++counter}.example.com`;

export type SeedPartnerOptions = Partial<{
  name: string;
  billing: 'prepaid' | 'invoice_monthly';
  quota: number;
  topup: number;
  perIdPence: number;
  card: string;
}>;

export async function seedPartner(deps: CoreDeps, opts: SeedPartnerOptions = {}) {
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

export interface CreatedChildBody {
  child: { api_key_id: string; child_user_id: string; key: string };
  website: { id: string; domain: string; tracking_script_id: string };
  subscription: { id: string; current_period_end: string };
}

/** Creates a managed child through the public API and returns the 201 body. */
export async function createChildVia(
  env: { app: { request: (url: string, init: RequestInit) => Response | Promise<Response> } },
  partnerKey: string,
  body: Record<string, unknown> = {},
): Promise<CreatedChildBody> {
  const res = await env.app.request('http://localhost/functions/v1/partner-create-child-key', {
    method: 'POST',
    headers: { 'x-access-key': partnerKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Child', domain: uniqueDomain('child'), ...body }),
  });
  if (res.status !== 201) throw new Error(`create child failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as CreatedChildBody;
}

/** A partner (seedPartner's options) with one managed child created through the public API (`child`: its request body). */
export async function seedPartnerWithChild(
  env: { deps: CoreDeps; app: { request: (url: string, init: RequestInit) => Response | Promise<Response> } },
  partner: SeedPartnerOptions,
  child: Record<string, unknown> = {},
) {
  const p = await seedPartner(env.deps, partner);
  return { partner: p, created: await createChildVia(env, p.key, child) };
}
