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

/* The label for text p_text (lower-cased), added if new. Concurrent first uses agree on one id. */
create function sl_search_label(p_text text) returns bigint
language plpgsql as $$
declare
  v_label text := left(lower(p_text), 1000);
  v_id bigint;
begin
  select id into v_id from search_labels where label = v_label;
  if v_id is null then
    insert into search_labels (label) values (v_label) on conflict (label) do nothing returning id into v_id;
    if v_id is null then
      select id into v_id from search_labels where label = v_label;
    end if;
  end if;
  return v_id;
end
$$;

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

/* The start of the billing period an identification by key p_key falls in: the child's, the
 * partner pool's for a partner's own tracker, else the calendar month (UTC). */
create function sl_identification_period(p_key uuid) returns timestamptz
language sql stable as $$
  select coalesce(
    (select s.current_period_start from child_subscriptions s where s.api_key_id = p_key),
    (select p.current_period_start from api_keys k join pools p on p.account_id = k.account_id
     where k.id = p_key and k.parent_api_key_id is null),
    date_trunc('month', now() at time zone 'UTC') at time zone 'UTC')
$$;

-- Aggregation now also queues identifications, in the same transaction as the visits it folds in.
alter function sl_apply_tracker_events(bigint[]) rename to sl_fold_tracker_events;

/*
 * Folds claimed events into their visitors (sl_fold_tracker_events), then queues one pending
 * identification per address, website and period whose tracker key is active (a suspended or
 * revoked child's visits are recorded, never identified), in key order like the fold. The events
 * are then done with: identification is the identifications row's business.
 */
create function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_applied integer;
begin
  v_applied := sl_fold_tracker_events(p_ids);
  insert into identifications (website_id, ip, api_key_id, period_start)
  select q.website_id, q.ip, q.api_key_id, sl_identification_period(q.api_key_id)
  from (
    select distinct on (t.website_id, t.ip) t.website_id, t.ip, t.api_key_id
    from tracker_events t join api_keys k on k.id = t.api_key_id
    where t.id = any(p_ids) and not t.is_bot and t.identify_status = 'pending' and k.status = 'active'
    order by t.website_id, t.ip, t.id desc
  ) q
  order by q.website_id, q.ip
  on conflict (website_id, ip, period_start) do nothing;
  update tracker_events set identify_status = 'done' where id = any(p_ids) and identify_status = 'pending';
  return v_applied;
end
$$;

/*
 * Claims up to p_limit pending identifications, oldest first, leased for p_lease_ms on the
 * database's clock (a dead worker's claim is claimable again after it), with what the worker needs:
 * the owner's account (whose lookup cache it reads) and the key's status now.
 */
create function sl_claim_identifications(p_limit integer, p_lease_ms integer)
returns table (id uuid, ip text, api_key_id uuid, account_id uuid, key_status text, attempts integer)
language sql as $$
  with claimed as (
    update identifications i
    set lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0), attempts = i.attempts + 1
    where i.id in (
      select c.id from identifications c
      where c.status = 'pending' and (c.lease_until is null or c.lease_until < clock_timestamp())
      order by c.created_at
      limit p_limit
      for update skip locked
    )
    returning i.id, i.ip, i.api_key_id, i.attempts
  )
  select c.id, host(c.ip), c.api_key_id, k.account_id, k.status, c.attempts from claimed c join api_keys k on k.id = c.api_key_id
$$;

/* What `visitor_identified` carries (README: "Visitor identification webhook"). */
create function sl_visitor_identified_data(p_id uuid) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'child_api_key_id', i.api_key_id,
    'identification_id', i.id,
    'website_id', i.website_id,
    'tracker_site', w.domain,
    'ip', host(i.ip),
    'identification_type', i.identification_type,
    'identified_at', sl_iso(i.identified_at),
    'confidence', i.confidence,
    'company', jsonb_build_object(
      'name', i.company_name, 'domain', i.domain, 'linkedin_url', i.company_linkedin_url, 'industry', i.industry,
      'employee_count', i.employee_range, 'location', i.location, 'country', nullif(i.country, '')),
    'individual', case when i.identification_type = 'individual' then jsonb_build_object(
      'linkedin_url', i.person_linkedin_url, 'linkedin_name', i.person_linkedin_name,
      'linkedin_title', i.person_linkedin_title, 'linkedin_company', i.person_linkedin_company) end,
    'visit', jsonb_build_object(
      'first_seen', sl_iso(v.first_seen), 'last_seen', sl_iso(v.last_seen), 'visit_count', v.visit_count,
      'pages_viewed', v.pages_viewed, 'active_seconds', v.active_ms / 1000, 'referrer', v.referrer,
      'high_intent', v.high_intent))
  from identifications i
  join websites w on w.id = i.website_id
  left join visitors v on v.website_id = i.website_id and v.ip = i.ip
  where i.id = p_id
$$;

/*
 * Settles a claimed identification in one transaction. p_result is the verdict as identification
 * columns (status `identified` or `failed`); p_cache, when given, is the lookup result cached for the
 * owner's account for p_ttl (the first stored result stands until it expires, as in
 * sl_charge_lookup).
 *
 * A failed one (no business behind the address) uses nothing. An identified one uses one ID
 * (sl_consume_id): consumed (or an account the ledger does not meter) → recorded, made the
 * visitor's current identification, and `visitor_identified` emitted to the key's own webhook;
 * anything else (suspended, revoked, canceled, out of IDs, pool exhausted) → nothing is
 * identified and the pending row is removed, so a later visit in the period can queue it again.
 * An identification already settled (a second worker after a lease ran out) is left alone.
 */
create function sl_settle_identification(p_id uuid, p_result jsonb, p_cache jsonb, p_ttl interval)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  i identifications;
  r identifications;
  c record;
  v_owner uuid;
  v_partner uuid;
begin
  select * into i from identifications where id = p_id for update;
  if i.id is null or i.status <> 'pending' then
    return query select 'settled'::text, null::uuid, null::uuid, false;
    return;
  end if;
  select account_id into v_owner from api_keys where id = i.api_key_id;
  if p_cache is not null then
    insert into ip_cache as x (account_id, operation, ip, result, expires_at)
    values (v_owner, 'tracker', i.ip, p_cache, now() + p_ttl)
    on conflict (account_id, operation, ip) do update
      set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
      where x.expires_at <= now();
  end if;
  r := jsonb_populate_record(null::identifications, p_result);

  if r.status = 'failed' then
    update identifications
    set status = 'failed', identified_at = clock_timestamp(), lease_until = null,
        traffic_type = r.traffic_type, reason = r.reason, confidence = r.confidence, country = r.country
    where id = p_id;
    return query select 'failed'::text, null::uuid, null::uuid, false;
    return;
  end if;

  select * into c from sl_consume_id(i.api_key_id);
  if c.outcome not in ('consumed', 'not_metered') then
    delete from identifications where id = p_id;
    return query select c.outcome, c.reload_pool_id, c.partner_account_id, c.emitted;
    return;
  end if;

  update identifications
  set status = 'identified', identified_at = clock_timestamp(), lease_until = null,
      identification_type = r.identification_type, traffic_type = r.traffic_type, reason = r.reason,
      confidence = r.confidence, country = r.country, domain = r.domain, company_name = r.company_name,
      company_linkedin_url = r.company_linkedin_url, industry = r.industry, employee_range = r.employee_range,
      employees = r.employees, location = r.location,
      person_linkedin_url = r.person_linkedin_url, person_linkedin_name = r.person_linkedin_name,
      person_linkedin_title = r.person_linkedin_title, person_linkedin_company = r.person_linkedin_company
  where id = p_id;
  update visitors
  set identification_id = p_id,
      label_id = sl_search_label(concat_ws(' ', r.person_linkedin_name, r.company_name, r.domain))
  where website_id = i.website_id and ip = i.ip;
  v_partner := coalesce(c.partner_account_id, v_owner);
  perform sl_emit(v_partner, i.api_key_id, 'visitor_identified', sl_visitor_identified_data(p_id), 'child');
  return query select c.outcome, c.reload_pool_id, v_partner, true;
end
$$;

/* Gives a claimed identification back after its lookup failed: claimable again after a minute per attempt so far. */
create function sl_release_identification(p_id uuid) returns void
language sql as $$
  update identifications set lease_until = clock_timestamp() + interval '1 minute' * attempts where id = p_id and status = 'pending'
$$;

/* Records one identified ip-to-company / ip-to-best-fit lookup by key p_key (list-visitors' api rows). */
create function sl_record_api_lookup(p_key uuid, p_ip inet, p_domain text, p_company text, p_confidence real, p_country text)
returns void
language sql as $$
  insert into api_lookups as a (api_key_id, ip, domain, company_name, confidence, country, label_id)
  values (p_key, p_ip, p_domain, p_company, p_confidence, p_country, sl_search_label(concat_ws(' ', p_company, p_domain)))
  on conflict (api_key_id, ip) do update
    set last_seen = greatest(a.last_seen, now()), lookup_count = a.lookup_count + 1, domain = excluded.domain,
        company_name = excluded.company_name, confidence = excluded.confidence, country = excluded.country,
        label_id = excluded.label_id
$$;

/* Drops a pending identification whose key can no longer identify (suspended or revoked): no lookup, nothing used. */
create function sl_drop_identification(p_id uuid) returns void
language sql as $$
  delete from identifications where id = p_id and status = 'pending'
$$;

/*
 * Whether an identification by key p_key could use an ID now: asked before the paid providers, so a
 * paused or exhausted child costs no provider calls (settling decides for real, under the locks).
 */
create function sl_can_identify(p_key uuid) returns boolean
language sql stable as $$
  select case
    when k.status <> 'active' then false
    when s.id is not null then s.status = 'active' and (s.ids_used_this_period < s.monthly_id_quota or s.topup_balance > 0)
    when k.parent_api_key_id is not null then false
    when p.id is not null then p.pool_billing_mode = 'invoice_monthly' or p.ids_used_this_period < p.monthly_id_quota or p.topup_balance > 0
    else true
  end
  from api_keys k
  left join child_subscriptions s on s.api_key_id = k.id
  left join pools p on p.account_id = k.account_id and k.parent_api_key_id is null
  where k.id = p_key
$$;
