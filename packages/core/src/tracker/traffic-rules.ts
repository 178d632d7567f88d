import { z } from '@hono/zod-openapi';
import { getDomain } from 'tldts';
import { actsOnAccount } from '../auth/authenticate.ts';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest, forbidden, sqlCall } from '../kernel/errors.ts';
import { parseCidr } from '../kernel/net/ip.ts';
import { Timestamp, Uuid, whenGiven } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from './normalise-tracker-domain.ts';

/** Rules one account may hold, account-wide and per website together: far more than offices, agencies and countries need. */
export const MAX_TRAFFIC_RULES = 500;
/** The widest networks a cidr rule may name: wider is a typo that would exclude a continent (a country rule does that). */
const MIN_PREFIX = { 4: 8, 6: 16 } as const;

const KINDS = ['cidr', 'domain', 'path', 'country'] as const;
type Kind = (typeof KINDS)[number];

export const TrafficRule = z
  .object({
    id: z.string().openapi({ format: 'uuid' }),
    website_id: z.string().nullable().openapi({ format: 'uuid', description: 'The website the rule is for; null: every website of the account' }),
    kind: z.enum(KINDS).openapi({
      description:
        'cidr: the visitor’s address is in the network; domain: the company the waterfall names has this domain or a subdomain of it; ' +
        'path: the page’s path matches; country: the visitor’s country (ISO 3166-1 alpha-2)',
    }),
    value: z.string().openapi({ description: 'As stored: a canonical network, a lower-case domain, a path pattern, an upper-case country code' }),
    created_at: Timestamp,
  })
  .openapi('TrafficRule');
export type TrafficRule = z.infer<typeof TrafficRule>;

export const TrafficRuleScopes = z.object({
  account_wide: z.boolean().openapi({ description: 'Whether the key may add and remove account-wide rules (a key that acts on its account)' }),
  websites: z
    .array(z.object({ id: z.string().openapi({ format: 'uuid' }), domain: z.string() }))
    .openapi({ description: 'The websites the key may add rules for, by domain' }),
});

export const ListTrafficRulesInput = z.object({
  website_id: Uuid.optional().openapi({ description: 'Only this website’s rules (without the account-wide ones)' }),
});
export type ListTrafficRulesInput = z.infer<typeof ListTrafficRulesInput>;

export const CreateTrafficRuleInput = z
  .object({
    website_id: Uuid.optional().openapi({
      description: 'A website of the key’s account (a key scoped to its own websites: one it owns). Absent: the rule is for the whole account',
    }),
    kind: z.enum(KINDS, whenGiven('must be cidr, domain, path or country')),
    value: z
      .string(whenGiven('must be a string'))
      .min(1, 'is required')
      .max(512, 'must be at most 512 characters')
      .openapi({
        description:
          'cidr: an address or a network (203.0.113.7, 10.0.0.0/8, 2001:db8::/32; at least /8 for IPv4, /16 for IPv6), stored as its network; ' +
          'domain: a registrable domain (acme.com), matching its subdomains too; path: a path from / where * matches any characters ' +
          '(/careers matches only /careers, /careers* also /careers/x; no query); country: ISO 3166-1 alpha-2 (de, DE)',
      }),
  })
  .openapi('CreateTrafficRule');
export type CreateTrafficRuleInput = z.infer<typeof CreateTrafficRuleInput>;

export const DeleteTrafficRuleInput = z.object({ id: Uuid.openapi({ description: 'The rule to remove' }) }).openapi('DeleteTrafficRule');
export type DeleteTrafficRuleInput = z.infer<typeof DeleteTrafficRuleInput>;

/** A cidr value: an address (its /32 or /128) or a network no wider than MIN_PREFIX; Postgres makes it canonical. */
function normaliseCidr(raw: string): string {
  const value = raw.trim().toLowerCase();
  const parsed = parseCidr(value);
  if (!parsed) throw badRequest('value must be an IP address or a CIDR network, like 203.0.113.7 or 10.0.0.0/8');
  const bits = value.includes('/') ? Number(value.split('/')[1]) : parsed.version === 4 ? 32 : 128;
  if (bits < MIN_PREFIX[parsed.version]) {
    throw badRequest(`value must be no wider than /${MIN_PREFIX[parsed.version]} for IPv${parsed.version}: a country rule excludes a whole country`);
  }
  return value;
}

/** A domain value: a registrable domain (the waterfall names companies by theirs), lower case. */
function normaliseRuleDomain(raw: string): string {
  const host = normaliseTrackerDomain(raw, 'value');
  const registrable = getDomain(host, { allowPrivateDomains: true });
  if (registrable !== host)
    throw badRequest(`value must be a registrable domain like ${registrable ?? 'example.com'}: its subdomains are matched too`);
  return host;
}

/** A path value: from '/', no query, fragment or whitespace; '*' is the only special character. */
function normalisePath(raw: string): string {
  const value = raw.trim();
  if (!value.startsWith('/')) throw badRequest('value must be a path starting with /, like /careers or /blog/*');
  if (/[\s?#]/.test(value)) throw badRequest('value must be a path without a query, fragment or whitespace');
  return value;
}

function normaliseCountry(raw: string): string {
  const value = raw.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(value)) throw badRequest('value must be a two-letter ISO 3166-1 country code, like DE');
  return value;
}

const NORMALISE: Record<Kind, (raw: string) => string> = {
  cidr: normaliseCidr,
  domain: normaliseRuleDomain,
  path: normalisePath,
  country: normaliseCountry,
};

/**
 * The traffic rules the key manages: for a key that acts on its account, every rule of the account
 * (account-wide and per website); for a key scoped to its own websites, those websites' rules only.
 * `website_id` narrows to one website's rules (one the key cannot read lists none). With them, what
 * the key may add rules for: its account (account_wide), and which websites.
 */
export async function listTrafficRules({
  ctx,
  input,
}: VerbArgs<ListTrafficRulesInput & { key: KeyRecord }>): Promise<{ rules: TrafficRule[] } & z.infer<typeof TrafficRuleScopes>> {
  const websites = await ctx.db<{ id: string; domain: string }>`
    select w.id::text as id, w.domain from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${input.key.apiKeyId}
    where k.account_id = me.account_id and (me.scope = 'account' or w.api_key_id = me.id) and w.status = 'active'
    order by w.domain`;
  const rules = await ctx.db<TrafficRule>`
    select r.id::text as id, r.website_id::text as website_id, r.kind, r.value, sl_iso(r.created_at) as created_at
    from traffic_rules r join api_keys me on me.id = ${input.key.apiKeyId}
    where r.account_id = me.account_id
      and (me.scope = 'account' or r.website_id in (select w.id from websites w where w.api_key_id = me.id))
      and (${input.website_id ?? null}::uuid is null or r.website_id = ${input.website_id ?? null}::uuid)
    order by r.website_id nulls first, r.kind, r.value`;
  return { rules, account_wide: actsOnAccount(input.key), websites };
}

/**
 * Adds a traffic rule (sl_create_traffic_rule): for one website the key can read, or, without
 * `website_id`, for its whole account (a key that acts on the account only). The value is
 * normalised per kind, or a 400 says what is wrong. The same rule again answers the one there is
 * (`created` false); past MAX_TRAFFIC_RULES for the account, 409. It applies from the next beacon
 * the tracker worker takes, on every replica: the worker reads the rules in each batch.
 */
export async function createTrafficRule({
  ctx,
  input,
}: VerbArgs<CreateTrafficRuleInput & { key: KeyRecord }>): Promise<{ rule: TrafficRule; created: boolean }> {
  if (!input.website_id && !actsOnAccount(input.key)) {
    throw forbidden('an account-wide rule needs a key that acts on the account: this key is scoped to its own websites; name one in website_id');
  }
  const value = NORMALISE[input.kind](input.value);
  const [row] = await sqlCall(
    () => ctx.db<TrafficRule & { created: boolean }>`
      select r.id::text as id, r.website_id::text as website_id, r.kind, r.value, sl_iso(r.created_at) as created_at, r.created
      from sl_create_traffic_rule(${input.key.apiKeyId}, ${input.website_id ?? null}::uuid, ${input.kind}, ${value}, ${MAX_TRAFFIC_RULES}) r`,
  );
  if (!row) throw new Error('sl_create_traffic_rule answered no row');
  const { created, ...rule } = row;
  return { rule, created };
}

/** Removes a traffic rule the key manages (sl_delete_traffic_rule: 404 for one it cannot see, 403 for an account-wide one to a key scoped to its websites). */
export async function deleteTrafficRule({ ctx, input }: VerbArgs<DeleteTrafficRuleInput & { key: KeyRecord }>): Promise<{ rule: TrafficRule }> {
  const [rule] = await sqlCall(
    () => ctx.db<TrafficRule>`
      select r.id::text as id, r.website_id::text as website_id, r.kind, r.value, sl_iso(r.created_at) as created_at
      from sl_delete_traffic_rule(${input.key.apiKeyId}, ${input.id}) r`,
  );
  if (!rule) throw new Error('sl_delete_traffic_rule answered no row');
  return { rule };
}
