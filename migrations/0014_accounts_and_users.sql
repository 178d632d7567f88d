-- requires: functions/account/sl_is_bare_host.sql
-- requires: functions/account/sl_are_bare_hosts.sql
-- Issue 13, the account side: the account's own settings (api-update-settings), its trial, the
-- users connected to it and their connect links, the idempotency store of the connected-user
-- endpoints, per-day usage counters, the credit ledger's debits and auto-reload, and events to the
-- account's own webhook.
--
-- Lock order, as in 0002: an accounts row before anything it owns. A credit debit, a settings
-- change, a reload claim and an ICP create all lock the accounts row, so they serialise per account
-- and never deadlock with each other.

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

-- Usage per account, day (UTC) and operation. `api_call` counts authenticated requests; every other
-- operation counts what was done (research, message, connect, ip-to-company, ...).
create table usage_daily (
  account_id  uuid not null references accounts (id) on delete cascade,
  day         date not null,
  operation   text not null check (operation ~ '^[a-z][a-z0-9_-]{0,39}$'),
  calls       bigint not null check (calls > 0),
  primary key (account_id, day, operation)
);

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

-- Events to the account's own webhook: destination 'account', the account in partner_account_id.
alter table events drop constraint events_destination_check;
alter table events add constraint events_destination_check check (destination in ('partner', 'child', 'account'));
