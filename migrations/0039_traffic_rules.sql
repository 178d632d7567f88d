-- Traffic rules (docs/decisions/traffic-rules.md): traffic a customer excludes from identification
-- — its own offices, its agency, its staff pages, countries it does not sell to. Excluded traffic is
-- never identified and never uses an ID; it is stored as excluded, with the rule's kind as the
-- reason, so visitor-stats can count it beside bots and the waterfall's traffic types.
--
-- Where each kind applies: an address (cidr) or a page (path) is known when the beacon arrives, and
-- the tracker worker's aggregation (sl_apply_tracker_events) marks such an event excluded instead of
-- folding it into its visitor; a country or a company domain is known only once the waterfall has
-- answered, and the settle (sl_settle_locked_identification) stores such an identification as
-- excluded instead of charging it. Both read the rules from this table in the worker's batches, so a
-- rule applies to the next beacon every replica works, with no cache to clear.

create table traffic_rules (
  id          uuid primary key default gen_random_uuid(),
  account_id  uuid not null references accounts (id) on delete cascade,
  -- One website's rule; null: every website of the account.
  website_id  uuid references websites (id) on delete cascade,
  kind        text not null check (kind in ('cidr', 'domain', 'path', 'country')),
  -- Normalised by the verb (traffic-rules.ts) and held to it here:
  --   cidr     the network in canonical form (10.0.0.0/8, 203.0.113.7/32, 2001:db8::/32)
  --   domain   a registrable lower-case name (acme.com); matches it and its subdomains
  --   path     '/' then a path; '*' matches any run of characters, anything else itself
  --   country  ISO 3166-1 alpha-2, upper case
  value       text not null check (length(value) between 1 and 512),
  network     cidr generated always as (case when kind = 'cidr' then value::cidr end) stored,
  -- The path as a LIKE pattern: the literal characters escaped, '*' → '%'.
  path_like   text generated always as (
    case when kind = 'path' then replace(replace(replace(replace(value, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%') end
  ) stored,
  created_at  timestamptz not null default now(),
  constraint traffic_rules_cidr_canonical check (kind <> 'cidr' or value = network::text),
  constraint traffic_rules_domain_shape check (
    kind <> 'domain' or (length(value) <= 253 and value ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})$')
  ),
  constraint traffic_rules_path_shape check (kind <> 'path' or value ~ '^/[^[:space:]?#]*$'),
  constraint traffic_rules_country_shape check (kind <> 'country' or value ~ '^[A-Z]{2}$'),
  -- One rule per scope, kind and value: adding it again is answered with the one there is.
  constraint traffic_rules_once unique nulls not distinct (account_id, website_id, kind, value)
);
create index traffic_rules_by_website on traffic_rules (website_id) where website_id is not null;

-- Beacons the worker excluded by an address or a page rule: never folded into a visitor, never identified.
alter table tracker_events add column excluded_by text check (excluded_by in ('cidr', 'path'));

-- Identifications the settle excluded by a country or a company domain rule: settled, never charged,
-- never a visitor's identification. The verdict's traffic type, country, domain and company stay, so
-- the next beacon can tell whether the rule still holds (sl_apply_tracker_events queues it again when not).
alter table identifications drop constraint identifications_status_check;
alter table identifications
  add constraint identifications_status_check check (status in ('pending', 'identified', 'failed', 'excluded')),
  add column excluded_by text check (excluded_by in ('country', 'domain')),
  add constraint identifications_excluded_by_reason check ((status = 'excluded') = (excluded_by is not null));
