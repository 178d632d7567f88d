-- What a key may do: act on its account, or only read its own websites.
--
-- A key released from a partner (partner-release-child) goes back to the partner's account as a
-- direct tracker, and its plaintext is still with the former customer. Without a scope it was a key
-- of the partner's account like any other: it listed the partner's own trackers, read their
-- identifications, spent the account's credits, made connect links and, through a user connected
-- with one, changed the account's settings. The spec keeps the released tracker working; it does not
-- hand its holder the account.
--
-- scope = 'account': the key acts on its account (connect links, x-user-id calls, paid lookups) and
--   reads every website of it: a direct account's key, a partner's master key, a managed child's key
--   (its account is its own phantom user).
-- scope = 'websites': the key reads the websites it owns (list-visitors, identification-list) and its
--   own lookups, and nothing else of the account. Every key of a partner account but the master is
--   one: a released child, and a tracker key the operator made for the partner (create-key).
-- Its tracker keeps working either way: collect and the script are keyed by tracking id, not by key.

-- No column default: a new key's scope follows from its account (sl_key_scope below), so an insert
-- that names none (sl_create_child, the operator's keys) gets the right one.
alter table api_keys add column scope text;

-- Backfill by the same rule: in a partner account only the master acts on the account (released
-- children and the operator's tracker keys there become 'websites'); direct accounts and children
-- keep 'account', which is what every key could do before.
update api_keys k set scope = case when a.is_partner and not k.is_partner_master then 'websites' else 'account' end
from accounts a
where a.id = k.account_id;

alter table api_keys
  alter column scope set not null,
  add constraint api_keys_scope_known check (scope in ('account', 'websites')),
  -- The designated master key is the partner account's own key.
  add constraint api_keys_master_acts_on_account check (not is_partner_master or scope = 'account'),
  -- A managed child's account is its own phantom user: its key acts on it, as it always has.
  add constraint api_keys_child_acts_on_its_account check (parent_api_key_id is null or scope = 'account');

/*
 * In a partner account only the master key acts on the account. A CHECK cannot see the account's
 * partner flag, so this trigger holds it whenever a key is written into an account or given a scope:
 * a key inserted without a scope gets the one its account allows ('websites' in a partner account
 * unless it is the master, else 'account'), and a write that would give a partner account a second
 * key to it fails as a constraint violation (23514), like a CHECK. (The operator has no command
 * that flags an existing account as a partner, so an account's flag does not change under its keys.)
 */
create function sl_key_scope() returns trigger
language plpgsql as $$
declare
  v_partner boolean := exists (select 1 from accounts a where a.id = new.account_id and a.is_partner);
begin
  if new.scope is null then
    new.scope := case when v_partner and not new.is_partner_master then 'websites' else 'account' end;
  end if;
  if new.scope = 'account' and not new.is_partner_master and v_partner then
    raise exception 'key % of partner account % must be scoped to its websites: only the master key acts on a partner account',
      new.id, new.account_id
      using errcode = '23514', constraint = 'api_keys_partner_scope';
  end if;
  return new;
end
$$;

create trigger api_keys_partner_scope
  before insert or update of scope, account_id, is_partner_master on api_keys
  for each row
  execute function sl_key_scope();

-- Authentication reads the scope, so a cached key record must be dropped when it changes (0005).
drop trigger api_keys_auth_changed on api_keys;
create trigger api_keys_auth_changed
  after update on api_keys
  for each row
  when (old.status is distinct from new.status
        or old.key_hash is distinct from new.key_hash
        or old.is_partner_master is distinct from new.is_partner_master
        or old.parent_api_key_id is distinct from new.parent_api_key_id
        or old.account_id is distinct from new.account_id
        or old.scope is distinct from new.scope)
  execute function sl_notify_auth_changed();

/*
 * partner-release-child: the key returns to the partner's direct account, its subscription and
 * phantom user are deleted and its remaining top-up goes to the pool (lost when there is no pool).
 * As 0002, and the key is scoped to its own websites in the same statement that moves it into the
 * partner's account: from the commit on it is a tracker of the partner, not a key to the account.
 */
create or replace function sl_release_child(p_master uuid, p_child uuid)
returns table (topup_returned integer)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  v_partner uuid := sl_partner_of(p_master);
  v_phantom uuid;
begin
  s := sl_lock_child(p_master, p_child);
  select account_id into v_phantom from api_keys where id = p_child for update;
  update pools set topup_balance = topup_balance + s.topup_balance where account_id = v_partner;
  update api_keys set
    account_id = v_partner,
    parent_api_key_id = null,
    scope = 'websites',
    -- It keeps tracking as a direct tracker of the partner, unless it was revoked.
    status = case when status = 'revoked' then 'revoked' else 'active' end,
    suspended_reason = null
  where id = p_child;
  delete from child_subscriptions where id = s.id;
  delete from accounts a where a.id = v_phantom and a.is_phantom
    and not exists (select 1 from api_keys where account_id = v_phantom);
  perform sl_emit(v_partner, p_child, 'child.released', jsonb_build_object(
    'child_api_key_id', p_child,
    'topup_returned', s.topup_balance));
  return query select s.topup_balance;
end
$$;

/*
 * partner-adopt-existing-key: a direct key of the caller's own account becomes a managed child under
 * a new phantom user, with its own subscription. p_set_webhook overwrites the key's webhook.
 * As 0002, and the key acts on its new (phantom) account, as every child key does.
 */
create or replace function sl_adopt_key(
  p_master uuid, p_key uuid, p_name text, p_quota integer, p_brand_name text,
  p_set_webhook boolean, p_webhook_url text, p_secret_sealed text
) returns table (
  api_key_id uuid, child_user_id uuid, status text, website_id uuid, tracking_script_id uuid, domain text,
  subscription_id uuid, monthly_id_quota integer, current_period_end timestamptz, sub_status text
)
language plpgsql as $$
#variable_conflict use_column
declare
  k api_keys;
  v_partner uuid := sl_partner_of(p_master);
  v_user uuid;
  v_site record;
begin
  select * into k from api_keys where api_keys.id = p_key for update;
  if k.id is null then
    raise exception 'no key with id %', p_key using errcode = 'SL404';
  end if;
  if k.id = p_master then
    raise exception 'the authenticating master key cannot adopt itself' using errcode = 'SL409';
  end if;
  if k.parent_api_key_id = p_master then
    raise exception 'key % is already a managed child of this partner', p_key using errcode = 'SL409';
  end if;
  if k.account_id <> v_partner then
    raise exception 'key % belongs to a different user', p_key using errcode = 'SL403';
  end if;
  if k.parent_api_key_id is not null then
    raise exception 'key % already has a parent', p_key using errcode = 'SL409';
  end if;
  if k.status <> 'active' then
    raise exception 'key % is not active (status %)', p_key, k.status using errcode = 'SL409';
  end if;
  select w.id, w.tracking_script_id, w.domain into v_site from websites w
  where w.api_key_id = p_key and w.status = 'active' order by w.created_at desc limit 1;
  if v_site.id is null then
    raise exception 'key % has no active website', p_key using errcode = 'SL409';
  end if;

  insert into accounts (name, is_phantom) values (p_name, true) returning accounts.id into v_user;
  update api_keys set
    account_id = v_user,
    parent_api_key_id = p_master,
    scope = 'account',
    name = p_name,
    brand_name = coalesce(p_brand_name, p_name),
    webhook_url = case when p_set_webhook then p_webhook_url else webhook_url end,
    webhook_secret_sealed = case when p_set_webhook then p_secret_sealed else webhook_secret_sealed end
  where api_keys.id = p_key;
  insert into child_subscriptions (api_key_id, kind, monthly_id_quota, current_period_end)
  values (p_key, 'managed_child', p_quota, now() + interval '30 days');

  perform sl_emit(v_partner, p_key, 'child.adopted', sl_child_snapshot(p_key));

  return query select p_key, v_user, 'active'::text, v_site.id, v_site.tracking_script_id, v_site.domain,
    s.id, s.monthly_id_quota, s.current_period_end, s.status
  from child_subscriptions s where s.api_key_id = p_key;
end
$$;

/*
 * One page of list-visitors: as in migration 0027, but a key scoped to its own websites lists only
 * the trackers it owns (a released child's key in the partner's account), as if the account's other
 * trackers were another account's. The key's scope is read here from its row, so no caller can widen
 * it. Same parameters, same answer for every key scoped to its account.
 */
create or replace function sl_list_visitors(
  p_account_id uuid, p_api_key_id uuid, p_site text, p_since timestamptz, p_pattern text,
  p_address_from text, p_address_to text, p_trackers boolean, p_api boolean, p_limit integer, p_offset integer)
returns table (total integer, count integer, visitors text)
language plpgsql stable
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
  v_all uuid[];
  v_domains text[];
  v_sites uuid[];
  v_labels bigint[] := '{}';
  v_total integer;
  v_page sl_listed_visitor[];
  -- A part's rows that can reach the page: the page's own, and those the offset skips.
  v_reach bigint := p_limit::bigint + p_offset;
begin
  -- The trackers the key can read, their domains at the same positions (read here once, not once
  -- per row): the account's, or only its own for a key scoped to its websites.
  select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.domain), '{}'),
         coalesce(array_agg(w.id) filter (where p_site is null or w.domain = p_site), '{}')
    into v_all, v_domains, v_sites
    from websites w join api_keys k on k.id = w.api_key_id
    join api_keys me on me.id = p_api_key_id
    where k.account_id = p_account_id and (me.scope = 'account' or w.api_key_id = me.id);

  if p_pattern is null and p_address_from is null then
    -- Every identified visitor of the listed trackers in the window, and every lookup of the key in
    -- it whose address none of those visitors has.
    select (select count(*) from visitors v
            where p_trackers and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since)
         + (select count(*) from api_lookups a
            where p_api and a.api_key_id = p_api_key_id and a.last_seen >= p_since
              and (p_trackers is not true or not exists (
                select 1 from visitors v
                where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null and v.last_seen >= p_since)))
      into v_total;
    -- The page from the newest rows of each part: each tracker's and the lookups', in the page's order.
    v_page := array(
      select row(m.*)::sl_listed_visitor from (
        select v.website_id, v.ip, v.last_seen, 'tracker'::text, v.identification_id, v.first_seen, v.visit_count, v.pages_viewed,
               v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
        from unnest(v_sites) s(id)
        cross join lateral (
          select * from visitors v
          where p_trackers and v.website_id = s.id and v.identification_id is not null and v.last_seen >= p_since
          order by v.last_seen desc, v.ip
          limit v_reach
        ) v
        union all
        select * from (
          select null::uuid, a.ip, a.last_seen, 'api'::text, a.id, null::timestamptz, null::integer, null::integer,
                 null::bigint, null::boolean, null::integer, null::boolean, null::boolean, null::text
          from api_lookups a
          where p_api and a.api_key_id = p_api_key_id and a.last_seen >= p_since
            and (p_trackers is not true or not exists (
              select 1 from visitors v
              where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null and v.last_seen >= p_since))
          order by a.last_seen desc, a.ip
          limit v_reach
        ) a
      ) m (website_id, ip, last_seen, source, row_id, first_seen, visit_count, pages_viewed, active_ms, high_intent,
           identified_count, is_watched, is_pinned, crm_status)
      order by m.last_seen desc, m.ip, m.website_id nulls last
      limit p_limit offset p_offset);
  else
    v_labels := case when p_pattern is null then '{}'::bigint[]
                     else array(select l.id from search_labels l where l.label like p_pattern) end;
    with tracked as (
      select v.website_id, v.ip, v.last_seen, v.identification_id as row_id, v.first_seen, v.visit_count, v.pages_viewed,
             v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
      from (
        -- The label matches, plus the address matches that are not label matches already.
        select * from visitors v
        where p_trackers and p_pattern is not null and v.label_id = any(v_labels)
          and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since
        union all
        select * from visitors v
        where p_trackers and p_address_from is not null and host(v.ip) ~>=~ p_address_from and host(v.ip) ~<~ p_address_to
          and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since
          and (v.label_id is null or v.label_id <> all(v_labels))
      ) v
    ), looked_up as (
      select a.ip, a.last_seen, a.id as row_id
      from (
        -- The same two branches over the key's own lookups.
        select * from api_lookups a
        where p_api and p_pattern is not null and a.label_id = any(v_labels) and a.api_key_id = p_api_key_id and a.last_seen >= p_since
        union all
        select * from api_lookups a
        where p_api and p_address_from is not null and host(a.ip) ~>=~ p_address_from and host(a.ip) ~<~ p_address_to
          and a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.label_id <> all(v_labels)
      ) a
    ), matching as (
      select t.website_id, t.ip, t.last_seen, 'tracker'::text as source, t.row_id, t.first_seen, t.visit_count, t.pages_viewed,
             t.active_ms, t.high_intent, t.identified_count, t.is_watched, t.is_pinned, t.crm_status
      from tracked t
      union all
      select null::uuid, l.ip, l.last_seen, 'api'::text, l.row_id, null, null, null, null, null, null, null, null, null
      from looked_up l
      where not exists (select 1 from tracked t where t.ip = l.ip)
    )
    select (select count(*) from matching),
           array(select row(m.*)::sl_listed_visitor from matching m
                 order by m.last_seen desc, m.ip, m.website_id nulls last
                 limit p_limit offset p_offset)
      into v_total, v_page;
  end if;

  -- The page as JSON text, keys in the contract's order: answered as it is, not parsed into rows and
  -- written out again by the server.
  return query
  select v_total, cardinality(v_page), coalesce(json_agg(r order by p.n), '[]')::text
  from unnest(v_page) with ordinality p (website_id, ip, last_seen, source, row_id, first_seen, visit_count, pages_viewed,
                                         active_ms, high_intent, identified_count, is_watched, is_pinned, crm_status, n)
  -- Limited, so not flattened into joins: each looked up by its key.
  left join lateral (
    select i.identification_type, i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title,
           i.person_linkedin_company, i.domain, i.company_name, i.company_linkedin_url, i.confidence, i.country,
           i.industry, i.employees
    from identifications i where p.source = 'tracker' and i.id = p.row_id limit 1
  ) i on true
  left join lateral (
    select a.company_name, a.domain, a.confidence, a.first_seen, a.country, a.lookup_count
    from api_lookups a where p.source = 'api' and a.id = p.row_id limit 1
  ) a on true
  cross join lateral (select
    host(p.ip) as ip, p.source,
    coalesce(i.identification_type, 'company') as identification_type,
    coalesce(i.person_linkedin_name, i.company_name, a.company_name) as display_name,
    i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title, i.person_linkedin_company,
    coalesce(i.domain, a.domain) as domain, coalesce(i.company_name, a.company_name) as company_name,
    i.company_linkedin_url, coalesce(i.confidence, a.confidence)::float8 as confidence,
    sl_iso(p.last_seen) as last_seen, sl_iso(coalesce(p.first_seen, a.first_seen)) as first_seen,
    coalesce(p.visit_count, 0) as visit_count, coalesce(p.pages_viewed, 0) as pages_viewed,
    coalesce(p.active_ms / 1000, 0)::integer as active_seconds,
    v_domains[array_position(v_all, p.website_id)] as tracker_site, nullif(coalesce(i.country, a.country), '') as country, i.industry, i.employees,
    coalesce(p.high_intent, false) as high_intent,
    p.row_id::text as raw_id,
    coalesce(p.identified_count, a.lookup_count) as lookup_count,
    -- With one tracker, a tracker row's address has visited exactly that one.
    case when p.source = 'tracker' and cardinality(v_all) = 1 then v_domains
         else array(select distinct v_domains[array_position(v_all, o.website_id)] as domain from visitors o
                    where o.ip = p.ip and o.website_id = any(v_all) order by domain) end as sites_visited,
    coalesce(p.is_watched, false) as is_watched, coalesce(p.is_pinned, false) as is_pinned, p.crm_status
  ) r;
end
$$;
