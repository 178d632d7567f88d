-- Visitor identification through the ID ledger, and the rows list-visitors and identification-list
-- read.
--
-- One identification (docs/decisions.md) is an address on a website in the owner's billing period:
-- the first visit of the period queues it (pending), a worker resolves the address through the IP
-- waterfall, and only a business identification uses an ID (sl_consume_id), in the same
-- transaction that records it and emits `visitor_identified`. Repeats within the period use
-- nothing; the next period identifies afresh. Nothing else uses an ID: vpn, hosting, isp,
-- education, government, unknown and bots are free.

create extension if not exists pg_trgm;

/*
 * list-visitors' `search` dictionary: each distinct text a row can be searched by (the display name,
 * company and domain, lower case) once, with its trigram index. Visitors of one company share a
 * label, so a search reads the few labels that match and then the rows by an ordinary index on
 * (website, label, last_seen), instead of a trigram index over every row, whose posting lists grow
 * with the table (npm run bench -- visitors). Labels are only ever added (sl_search_label); rows
 * keep their id without a foreign key, so a popular company's label is not a lock every insert
 * of its visitors queues on.
 */
create table search_labels (
  id    bigint generated always as identity primary key,
  label text not null unique check (length(label) <= 1000)
);
create index search_labels_trigrams on search_labels using gin (label gin_trgm_ops);

-- The tracker's lookups are cached per account like ip-to-company's, under their own operation.
alter table ip_cache drop constraint ip_cache_operation_check;
alter table ip_cache add constraint ip_cache_operation_check check (operation in ('ip-to-company', 'ip-to-best-fit', 'tracker'));

create table identifications (
  id                      uuid primary key default gen_random_uuid(),
  website_id              uuid not null references websites (id) on delete cascade,
  ip                      inet not null,
  -- The key whose IDs the identification uses (the tracker's owner when the visit arrived).
  api_key_id              uuid not null references api_keys (id) on delete cascade,
  -- The owner's billing period (sl_identification_period): one identification per address, website and period.
  period_start            timestamptz not null,
  status                  text not null default 'pending' check (status in ('pending', 'identified', 'failed')),
  created_at              timestamptz not null default now(),
  -- When the worker settled it (identified or failed); null while pending.
  identified_at           timestamptz,
  lease_until             timestamptz,
  attempts                integer not null default 0 check (attempts >= 0),
  identification_type     text check (identification_type in ('company', 'individual')),
  traffic_type            text check (traffic_type in ('business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown')),
  reason                  text check (length(reason) <= 1000),
  confidence              real check (confidence between 0 and 1),
  -- ISO 3166 alpha-2 of the address, '' when unknown.
  country                 text check (country ~ '^([A-Z]{2})?$'),
  domain                  text check (length(domain) <= 253),
  company_name            text check (length(company_name) <= 300),
  company_linkedin_url    text check (length(company_linkedin_url) <= 2048),
  industry                text check (length(industry) <= 200),
  employee_range          text check (length(employee_range) <= 50),
  employees               integer check (employees >= 0),
  location                text check (length(location) <= 300),
  person_linkedin_url     text check (length(person_linkedin_url) <= 2048),
  person_linkedin_name    text check (length(person_linkedin_name) <= 300),
  person_linkedin_title   text check (length(person_linkedin_title) <= 300),
  person_linkedin_company text check (length(person_linkedin_company) <= 300),
  unique (website_id, ip, period_start),
  check ((status = 'pending') = (identified_at is null)),
  check ((status = 'identified') = (identification_type is not null)),
  check (status <> 'identified' or (domain is not null and company_name is not null and traffic_type = 'business')),
  -- Personal data exists only on an individual identification, and those are made for US visitors
  -- only: an EU visitor's row can never hold a person, whatever the code above this does.
  check (identification_type = 'individual' or num_nonnulls(person_linkedin_url, person_linkedin_name, person_linkedin_title, person_linkedin_company) = 0),
  check (identification_type is distinct from 'individual' or (country = 'US' and person_linkedin_url is not null))
);
-- The worker's queue, oldest first.
create index identifications_pending on identifications (created_at) where status = 'pending';
create index identifications_by_site on identifications (website_id, created_at desc);

-- The visitor's current identification, and dashboard state (no endpoint sets it yet; the spec names it).
alter table visitors
  add column identification_id uuid references identifications (id) on delete set null,
  add column is_watched boolean not null default false,
  add column is_pinned boolean not null default false,
  add column crm_status text check (crm_status in ('new', 'contacted', 'qualified', 'customer', 'disqualified')),
  -- What list-visitors' `search` matches by name: the current identification's search label.
  add column label_id bigint;
create index visitors_identified on visitors (website_id, last_seen desc) where identification_id is not null;
create index visitors_by_label on visitors (website_id, label_id, last_seen desc) where identification_id is not null;
-- `search` by address: the term as a prefix of the address's text (203.0.113 finds the /24).
create index visitors_by_address_text on visitors (website_id, host(ip) text_pattern_ops) where identification_id is not null;
create index visitors_by_identification on visitors (identification_id);
create index visitors_by_ip on visitors (ip);

-- A key's own identified ip-to-company / ip-to-best-fit lookups: list-visitors' `api` rows.
create table api_lookups (
  id               uuid primary key default gen_random_uuid(),
  api_key_id       uuid not null references api_keys (id) on delete cascade,
  ip               inet not null,
  first_seen       timestamptz not null default now(),
  last_seen        timestamptz not null default now(),
  lookup_count     integer not null default 1 check (lookup_count > 0),
  domain           text not null check (length(domain) <= 253),
  company_name     text not null check (length(company_name) <= 300),
  confidence       real not null check (confidence between 0 and 1),
  country          text not null check (country ~ '^([A-Z]{2})?$'),
  label_id         bigint not null,
  unique (api_key_id, ip),
  check (last_seen >= first_seen)
);
create index api_lookups_recent on api_lookups (api_key_id, last_seen desc);
create index api_lookups_by_label on api_lookups (api_key_id, label_id, last_seen desc);
create index api_lookups_by_address_text on api_lookups (api_key_id, host(ip) text_pattern_ops);
