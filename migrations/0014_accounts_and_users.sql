-- Issue 13, the account side: the account's own settings (api-update-settings), its trial, the
-- users connected to it and their connect links, the idempotency store of the connected-user
-- endpoints, per-day usage counters, the credit ledger's debits and auto-reload, and events to the
-- account's own webhook.
--
-- Lock order, as in 0002: an accounts row before anything it owns. A credit debit, a settings
-- change, a reload claim and an ICP create all lock the accounts row, so they serialise per account
-- and never deadlock with each other.

-- A bare host as websites.domain spells it (lower case, at least one dot, no scheme, port or path).
create function sl_is_bare_host(p_host text) returns boolean
language sql immutable as $$
  select p_host is not null and length(p_host) <= 253 and p_host = lower(p_host)
    and p_host ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})$'
$$;

create function sl_are_bare_hosts(p_hosts text[]) returns boolean
language sql immutable as $$
  select coalesce(bool_and(sl_is_bare_host(h)), true) from unnest(p_hosts) h
$$;

alter table accounts
  -- The account's own webhook (api-update-settings): credits.*, user, message and ICP events. Sealed
  -- secret. HTTPS; plain http only where ALLOW_PRIVATE_WEBHOOKS lets a local receiver be used
  -- (development, tests): the application decides which, the table holds the common form.
  add column webhook_url text check (webhook_url is null or (length(webhook_url) <= 2048 and webhook_url ~ '^https?://')),
  add column webhook_secret_sealed text,
  -- Credit auto-reload: when the balance falls below the threshold, one charge of
  -- auto_reload_amount credits through the payment port (amount and card are set by the operator).
  add column auto_reload_enabled boolean not null default false,
  add column auto_reload_threshold integer not null default 0 check (auto_reload_threshold between 0 and 1000000000),
  add column auto_reload_amount integer check (auto_reload_amount is null or auto_reload_amount between 1 and 1000000000),
  -- What one credit costs the account, in pence, for the reload charge.
  add column credit_price_pence numeric(12, 4) check (credit_price_pence is null or credit_price_pence > 0),
  add column payment_customer_id text,
  add column payment_method_id text,
  -- Set while a reload charge is in flight: one per account; a mark older than 10 minutes is stale.
  add column credit_reload_started_at timestamptz,
  -- The payment idempotency key of the reload being attempted. Kept until the processor gives a
  -- definite answer (credited or declined), so a retry after a lost answer or a dead process repeats
  -- the same charge instead of making a second one.
  add column credit_reload_key text,
  -- Declines in a row and the last one: the next claim waits 1 h, doubling per decline up to 24 h.
  add column credit_reload_declines integer not null default 0 check (credit_reload_declines >= 0),
  add column credit_reload_declined_at timestamptz,
  -- When credits.low was last emitted for the current dip below the threshold; cleared when the
  -- balance is back at or above it, so the event fires once per crossing.
  add column credits_low_at timestamptz,
  -- Page hosts the account's trackers accept; empty: each tracker's own domain and its subdomains.
  add column allowed_domains text[] not null default '{}',
  add column trial_ends_at timestamptz,
  add constraint accounts_webhook_pair check ((webhook_url is null) = (webhook_secret_sealed is null)),
  add constraint accounts_allowed_domains check (
    cardinality(allowed_domains) <= 5 and array_position(allowed_domains, null) is null and sl_are_bare_hosts(allowed_domains)
  );

-- The credit ledger gains reloads (credited once per payment) and a link to what a debit paid for.
alter table credit_transactions drop constraint credit_transactions_type_check;
alter table credit_transactions
  add constraint credit_transactions_type_check check (type in ('debit', 'grant', 'reload')),
  add column payment_ref text unique,
  add column user_id uuid,
  -- What the debit paid for (a message id), when it is a row of ours.
  add column reference_id uuid,
  add constraint credit_transactions_reload_paid check ((type = 'reload') = (payment_ref is not null));

-- Users connected to an account (spec rule 2): their x-user-id acts for the account.
create table connected_users (
  id            uuid primary key default gen_random_uuid(),
  account_id    uuid not null references accounts (id) on delete cascade,
  name          text not null check (length(name) between 1 and 200),
  -- Their personal professional-profile URL, canonical form (https://www.linkedin.com/in/<slug>).
  linkedin_url  text not null check (linkedin_url ~ '^https://www\.linkedin\.com/in/[^/?#]+$' and length(linkedin_url) <= 300),
  title         text check (length(title) <= 300),
  company       text check (length(company) <= 300),
  status        text not null default 'connected' check (status in ('connected', 'disconnected')),
  connected_at  timestamptz not null default now(),
  -- Reconnecting the same profile to the same account gives back the same user.
  unique (account_id, linkedin_url)
);
create index connected_users_seats on connected_users (account_id) where status = 'connected';

-- A connect link: a one-time token (only its HMAC is kept, like an API key) that records a user.
create table connect_links (
  id            uuid primary key default gen_random_uuid(),
  account_id    uuid not null references accounts (id) on delete cascade,
  token_hash    text not null unique check (token_hash ~ '^[0-9a-f]{64}$'),
  created_at    timestamptz not null default now(),
  expires_at    timestamptz not null,
  used_at       timestamptz,
  user_id       uuid references connected_users (id) on delete set null,
  check (expires_at > created_at),
  check (used_at is not null or user_id is null)
);
create index connect_links_by_account on connect_links (account_id, created_at desc);

/*
 * Completes a connect link: records (or reconnects a disconnected) user and spends the link, in one
 * transaction, and the account hears of it: `user.connected` to the account webhook, with the user's
 * id (which the account needs for x-user-id) and profile. Raises SL404 for an unknown token,
 * SL410 for a used or expired one, SL409 for a profile connected to the account now (the link stays
 * unused).
 */
create function sl_complete_connect_link(p_token_hash text, p_name text, p_linkedin_url text, p_title text, p_company text)
returns table (user_id uuid, account_id uuid, reconnected boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  v_link connect_links;
  v_user uuid;
  v_existed boolean;
begin
  -- The file's lock order: the account first, then the link (found unlocked, then locked and re-read).
  select * into v_link from connect_links where token_hash = p_token_hash;
  if v_link.id is null then
    raise exception 'no such connect link' using errcode = 'SL404';
  end if;
  perform 1 from accounts where id = v_link.account_id for update;
  select * into v_link from connect_links where id = v_link.id for update;
  if v_link.id is null then
    raise exception 'no such connect link' using errcode = 'SL404';
  end if;
  if v_link.used_at is not null then
    raise exception 'this connect link has already been used' using errcode = 'SL410';
  end if;
  if v_link.expires_at <= now() then
    raise exception 'this connect link expired at %', sl_iso(v_link.expires_at) using errcode = 'SL410';
  end if;
  select id into v_user from connected_users where account_id = v_link.account_id and linkedin_url = p_linkedin_url;
  v_existed := v_user is not null;
  -- Nobody proves they own a profile, so a link cannot take over a user who is connected now (their
  -- name, title and company are the sender of messages): only a disconnected one is reconnected.
  if exists (select 1 from connected_users where id = v_user and status = 'connected') then
    raise exception 'this profile is already connected to the account' using errcode = 'SL409';
  end if;
  insert into connected_users (account_id, name, linkedin_url, title, company)
  values (v_link.account_id, p_name, p_linkedin_url, p_title, p_company)
  on conflict (account_id, linkedin_url) do update
    set name = excluded.name, title = excluded.title, company = excluded.company, status = 'connected', connected_at = now()
  returning id into v_user;
  update connect_links set used_at = now(), user_id = v_user where id = v_link.id;
  perform sl_count_usage(v_link.account_id, 'connect', 1);
  perform sl_emit(v_link.account_id, null, 'user.connected', jsonb_build_object(
    'user_id', v_user, 'link_id', v_link.id, 'name', p_name, 'linkedin_url', p_linkedin_url,
    'title', p_title, 'company', p_company, 'reconnected', v_existed), 'account');
  return query select v_user, v_link.account_id, v_existed;
end
$$;

-- Usage per account, day (UTC) and operation. `api_call` counts authenticated requests; every other
-- operation counts what was done (research, message, connect, ip-to-company, ...).
create table usage_daily (
  account_id  uuid not null references accounts (id) on delete cascade,
  day         date not null,
  operation   text not null check (operation ~ '^[a-z][a-z0-9_-]{0,39}$'),
  calls       bigint not null check (calls > 0),
  primary key (account_id, day, operation)
);

create function sl_count_usage(p_account uuid, p_operation text, p_calls bigint) returns void
language sql as $$
  insert into usage_daily (account_id, day, operation, calls)
  values (p_account, (now() at time zone 'UTC')::date, p_operation, p_calls)
  on conflict (account_id, day, operation) do update set calls = usage_daily.calls + excluded.calls
$$;

/*
 * Adds a batch of counts from a process's usage meter: [{account_id, operation, calls}]. Rows are
 * applied in key order, so two replicas flushing overlapping batches cannot deadlock.
 */
create function sl_record_usage(p_rows jsonb) returns integer
language sql as $$
  with input as (
    select (r ->> 'account_id')::uuid as account_id, r ->> 'operation' as operation, sum((r ->> 'calls')::bigint) as calls
    from jsonb_array_elements(p_rows) r
    group by 1, 2
  ), applied as (
    insert into usage_daily (account_id, day, operation, calls)
    select i.account_id, (now() at time zone 'UTC')::date, i.operation, i.calls
    from input i
    -- An account deleted since the request was counted has nobody to report to.
    where i.calls > 0 and exists (select 1 from accounts a where a.id = i.account_id)
    order by i.account_id, i.operation
    on conflict (account_id, day, operation) do update set calls = usage_daily.calls + excluded.calls
    returning 1
  )
  select count(*)::int from applied
$$;

-- Idempotent requests of the connected-user endpoints (x-idempotency-key), per account.
create table idempotent_requests (
  account_id       uuid not null references accounts (id) on delete cascade,
  idempotency_key  uuid not null,
  -- The endpoint and action, and a SHA-256 of the request (user + body): the same key with a
  -- different request is refused, never answered with another request's result.
  operation        text not null,
  request_hash     text not null check (request_hash ~ '^[0-9a-f]{64}$'),
  state            text not null default 'processing' check (state in ('processing', 'completed')),
  -- While processing: who may work on it until when. A repeat after the lease takes the work over.
  lease_until      timestamptz,
  response_status  integer check (response_status between 200 and 599),
  response_body    text,
  created_at       timestamptz not null default now(),
  completed_at     timestamptz,
  primary key (account_id, idempotency_key),
  check ((state = 'completed') = (response_status is not null and response_body is not null and completed_at is not null)),
  check ((state = 'processing') = (lease_until is not null))
);
create index idempotent_requests_expiry on idempotent_requests (created_at);

/*
 * Starts (or finds) the request with key p_key. outcome:
 *   started    – the caller does the work (a new key, or one whose worker's lease ran out);
 *   processing – another request with this key is at work (the caller answers 202);
 *   completed  – the stored response, to answer again as it is;
 *   mismatch   – the key was used for a different request.
 */
create function sl_begin_idempotent(p_account uuid, p_key uuid, p_operation text, p_hash text, p_lease_ms integer)
returns table (outcome text, response_status integer, response_body text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_row idempotent_requests;
begin
  -- A loop, because the row this insert conflicted with can be gone by the time it is locked: the
  -- request holding it was refused and gave the key back. Then the key is free again: try again.
  loop
    insert into idempotent_requests (account_id, idempotency_key, operation, request_hash, lease_until)
    values (p_account, p_key, p_operation, p_hash, clock_timestamp() + p_lease_ms * interval '1 millisecond')
    on conflict do nothing;
    if found then
      return query select 'started'::text, null::integer, null::text;
      return;
    end if;
    select * into v_row from idempotent_requests where account_id = p_account and idempotency_key = p_key for update;
    exit when v_row.account_id is not null;
  end loop;
  if v_row.operation <> p_operation or v_row.request_hash <> p_hash then
    return query select 'mismatch'::text, null::integer, null::text;
  elsif v_row.state = 'completed' then
    return query select 'completed'::text, v_row.response_status, v_row.response_body;
  elsif v_row.lease_until > clock_timestamp() then
    return query select 'processing'::text, null::integer, null::text;
  else
    update idempotent_requests set lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond'
    where account_id = p_account and idempotency_key = p_key;
    return query select 'started'::text, null::integer, null::text;
  end if;
end
$$;

-- Stores the outcome, as part of the transaction that made it.
create function sl_complete_idempotent(p_account uuid, p_key uuid, p_status integer, p_body text) returns void
language plpgsql as $$
begin
  update idempotent_requests
  set state = 'completed', response_status = p_status, response_body = p_body, completed_at = now(), lease_until = null
  where account_id = p_account and idempotency_key = p_key and state = 'processing';
  if not found then
    raise exception 'idempotent request % is not in progress', p_key using errcode = 'SL409';
  end if;
end
$$;

-- Forgets a request that was refused before it changed anything, so the key may be used again.
create function sl_release_idempotent(p_account uuid, p_key uuid) returns void
language sql as $$
  delete from idempotent_requests where account_id = p_account and idempotency_key = p_key and state = 'processing'
$$;

-- Events to the account's own webhook: destination 'account', the account in partner_account_id.
alter table events drop constraint events_destination_check;
alter table events add constraint events_destination_check check (destination in ('partner', 'child', 'account'));

create or replace function sl_event_has_destination(p_destination text, p_partner uuid, p_child uuid)
returns boolean
language sql stable as $$
  select case p_destination
    when 'partner' then exists (select 1 from accounts where id = p_partner and partner_webhook_url is not null)
    when 'account' then exists (select 1 from accounts where id = p_partner and webhook_url is not null)
    else exists (select 1 from api_keys where id = p_child and webhook_url is not null)
  end
$$;

-- 0008's claim, with the account destination resolved beside the partner and child ones.
create or replace function sl_claim_deliveries(
  p_owner uuid, p_now timestamptz, p_limit integer, p_partner uuid, p_first_only boolean, p_retry_cap integer, p_lease_ms integer
) returns table (event_id uuid, event text, body text, attempt integer, url text, secret_sealed text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_clock timestamptz := clock_timestamp();
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', v_clock));
  v_ids uuid[];
begin
  update events e set delivery_status = 'no_destination', lease_until = null, lease_owner = null
  where e.delivery_status = 'pending' and e.next_attempt_at <= v_now
    and (p_partner is null or e.partner_account_id = p_partner)
    and not sl_event_has_destination(e.destination, e.partner_account_id, e.child_api_key_id);

  select array_agg(id) into v_ids from (
    select e.id from events e
    where e.delivery_status = 'pending' and e.attempts = 0 and e.next_attempt_at <= v_now
      and (e.lease_until is null or e.lease_until < v_clock)
      and (p_partner is null or e.partner_account_id = p_partner)
    order by e.next_attempt_at, e.seq
    limit p_limit
    for update skip locked
  ) first_attempts;

  if not p_first_only and coalesce(array_length(v_ids, 1), 0) < p_limit then
    perform pg_advisory_xact_lock(7311995002);
    v_ids := coalesce(v_ids, '{}') || coalesce((
      select array_agg(c.id) from (
        select d.id from (
          select e.id, e.next_attempt_at, e.seq, dest.url,
                 row_number() over (partition by dest.url order by e.next_attempt_at, e.seq) as rn
          from events e
          cross join lateral (
            select case e.destination
              when 'partner' then (select partner_webhook_url from accounts where id = e.partner_account_id)
              when 'account' then (select webhook_url from accounts where id = e.partner_account_id)
              else (select webhook_url from api_keys where id = e.child_api_key_id) end as url
          ) dest
          where e.delivery_status = 'pending' and e.attempts > 0 and e.next_attempt_at <= v_now
            and (e.lease_until is null or e.lease_until < v_clock)
            and (p_partner is null or e.partner_account_id = p_partner)
        ) d
        left join (
          select a.url, count(*)::int as n from webhook_attempts a
          where a.is_retry and a.claimed_at > v_now - interval '1 minute'
          group by a.url
        ) recent on recent.url = d.url
        where d.rn <= greatest(0, p_retry_cap - coalesce(recent.n, 0))
        order by d.next_attempt_at, d.seq
        limit p_limit - coalesce(array_length(v_ids, 1), 0)
      ) c
    ), '{}');
  end if;

  return query
  with claimed as (
    update events e set lease_until = v_clock + p_lease_ms * interval '1 millisecond', lease_owner = p_owner
    where e.id = any(v_ids) and e.delivery_status = 'pending' and (e.lease_until is null or e.lease_until < v_clock)
    returning e.id, e.event, e.body, e.attempts + 1 as attempt, e.destination, e.partner_account_id, e.child_api_key_id, e.seq
  ), resolved as (
    select c.*, case c.destination
        when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url else k.webhook_url end as url,
      case c.destination
        when 'partner' then a.partner_webhook_secret_sealed when 'account' then a.webhook_secret_sealed else k.webhook_secret_sealed end as secret_sealed
    from claimed c
    left join accounts a on a.id = c.partner_account_id
    left join api_keys k on k.id = c.child_api_key_id
  ), logged as (
    insert into webhook_attempts (event_id, attempt, url, is_retry, claimed_at)
    select r.id, r.attempt, r.url, r.attempt > 1, v_now from resolved r
    on conflict (event_id, attempt) do update set claimed_at = excluded.claimed_at, url = excluded.url,
      finished_at = null, status_code = null, error = null, duration_ms = null, succeeded = null
    returning webhook_attempts.event_id
  )
  select r.id, r.event, r.body, r.attempt, r.url, r.secret_sealed from resolved r
  where exists (select 1 from logged l where l.event_id = r.id)
  order by r.seq;
end
$$;

/*
 * After the balance of p_account changed (locked by the caller): emits credits.low once per dip below
 * the auto-reload threshold and, when p_may_claim, claims a reload when one is wanted and none is in
 * flight or cooling off after a decline. Returns true when the caller must charge the reload (after
 * commit, through the payment port). Credits arriving (a reload, a grant) do not claim: nobody on
 * those paths charges, and the next debit below the threshold does.
 */
create function sl_after_balance_change(p_account uuid, p_may_claim boolean default true) returns boolean
language plpgsql as $$
declare
  v_acct accounts;
begin
  select * into v_acct from accounts where id = p_account;
  if v_acct.credit_balance >= v_acct.auto_reload_threshold then
    if v_acct.credits_low_at is not null then
      update accounts set credits_low_at = null where id = p_account;
    end if;
    return false;
  end if;
  if v_acct.credits_low_at is null and v_acct.auto_reload_threshold > 0 then
    update accounts set credits_low_at = now() where id = p_account;
    perform sl_emit(p_account, null, 'credits.low', jsonb_build_object(
      'balance', v_acct.credit_balance, 'threshold', v_acct.auto_reload_threshold,
      'auto_reload_enabled', v_acct.auto_reload_enabled), 'account');
  end if;
  if p_may_claim and v_acct.auto_reload_enabled and v_acct.auto_reload_amount is not null
     and v_acct.payment_method_id is not null and v_acct.credit_price_pence is not null
     and (v_acct.credit_reload_started_at is null or v_acct.credit_reload_started_at < now() - interval '10 minutes')
     and (v_acct.credit_reload_declined_at is null or v_acct.credit_reload_declined_at < now()
          - least(interval '24 hours', interval '1 hour' * power(2, greatest(v_acct.credit_reload_declines - 1, 0)))) then
    update accounts set credit_reload_started_at = now(), credit_reload_key = coalesce(credit_reload_key, gen_random_uuid()::text)
    where id = p_account;
    return true;
  end if;
  return false;
end
$$;

/*
 * Debits p_amount credits for p_operation (locking the account). Raises SL402 when the balance is
 * below the amount; nothing changes. Returns whether a reload was claimed (sl_after_balance_change).
 */
create function sl_debit_credits(p_account uuid, p_operation text, p_amount integer, p_user uuid, p_reference uuid)
returns boolean
language plpgsql as $$
declare
  v_balance integer;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  if p_amount <= 0 then
    return false;
  end if;
  if v_balance < p_amount then
    raise exception 'not enough credits: % needed, % available', p_amount, v_balance
      using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_amount, 'credit_balance', v_balance)::text;
  end if;
  update accounts set credit_balance = credit_balance - p_amount where id = p_account;
  insert into credit_transactions (account_id, type, amount, operation, user_id, reference_id)
  values (p_account, 'debit', p_amount, p_operation, p_user, p_reference);
  return sl_after_balance_change(p_account);
end
$$;

/*
 * Credits a reload charge once per payment reference, ends the in-flight mark and emits
 * credits.reloaded. A replayed confirmation credits nothing and returns null.
 */
create function sl_credit_reload(p_account uuid, p_payment_ref text, p_amount integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  perform 1 from accounts where id = p_account for update;
  insert into credit_transactions (account_id, type, amount, operation, payment_ref)
  values (p_account, 'reload', p_amount, 'auto_reload', p_payment_ref)
  on conflict (payment_ref) do nothing;
  if not found then
    return null;
  end if;
  update accounts set credit_balance = credit_balance + p_amount, credit_reload_started_at = null, credit_reload_key = null,
    credit_reload_declines = 0, credit_reload_declined_at = null
  where id = p_account returning credit_balance into v_balance;
  perform sl_emit(p_account, null, 'credits.reloaded', jsonb_build_object('amount', p_amount, 'balance', v_balance, 'payment_ref', p_payment_ref), 'account');
  perform sl_after_balance_change(p_account, false);
  return v_balance;
end
$$;

-- A declined reload: the claim and its key end, the next claim cools off (sl_after_balance_change), and the account hears of it.
create function sl_record_credit_reload_decline(p_account uuid, p_amount integer, p_reason text) returns void
language plpgsql as $$
begin
  update accounts set credit_reload_started_at = null, credit_reload_key = null,
    credit_reload_declines = credit_reload_declines + 1, credit_reload_declined_at = now()
  where id = p_account;
  perform sl_emit(p_account, null, 'credits.reload_failed', jsonb_build_object('amount', p_amount, 'reason', left(p_reason, 300)), 'account');
end
$$;

-- Operator grants also end a dip below the threshold.
create or replace function sl_grant_credits(p_account uuid, p_amount integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'credits must be a positive integer' using errcode = 'SL400';
  end if;
  update accounts set credit_balance = credit_balance + p_amount where id = p_account returning credit_balance into v_balance;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  insert into credit_transactions (account_id, type, amount, operation) values (p_account, 'grant', p_amount, 'grant');
  perform sl_after_balance_change(p_account, false);
  return v_balance;
end
$$;

-- 0007's lookup charge, now also telling the caller whether the debit claimed a credit reload.
drop function sl_charge_lookup(uuid, text, inet, integer, jsonb, interval);

create function sl_charge_lookup(p_account uuid, p_operation text, p_ip inet, p_cost integer, p_result jsonb, p_ttl interval)
returns table (balance integer, result jsonb, ttl_ms float8, reload boolean)
language plpgsql as $$
declare
  v_balance integer;
  v_reload boolean := false;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  if p_cost > 0 then
    if v_balance < p_cost then
      raise exception 'not enough credits: % needed, % available', p_cost, v_balance
        using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_cost, 'credit_balance', v_balance)::text;
    end if;
    update accounts set credit_balance = credit_balance - p_cost where id = p_account;
    insert into credit_transactions (account_id, type, amount, operation, ip) values (p_account, 'debit', p_cost, p_operation, p_ip);
    v_balance := v_balance - p_cost;
    v_reload := sl_after_balance_change(p_account);
  end if;
  insert into ip_cache as c (account_id, operation, ip, result, expires_at)
  values (p_account, p_operation, p_ip, p_result, now() + p_ttl)
  on conflict (account_id, operation, ip) do update
    set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
    where c.expires_at <= now();
  return query
    select v_balance, c.result, (extract(epoch from (c.expires_at - now())) * 1000)::float8, v_reload
    from ip_cache c
    where c.account_id = p_account and c.operation = p_operation and c.ip = p_ip;
end
$$;
