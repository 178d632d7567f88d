-- Foundation schema: accounts, keys, websites, the partner pool, child subscriptions,
-- top-ups, invoices and the events outbox. Every balance invariant is a CHECK constraint,
-- so a bug in application code cannot corrupt the ledger; multi-row changes are SQL functions.
--
-- Errors raised on purpose by these functions use SQLSTATE 'SL' || <http status>
-- (e.g. SL409); the application maps that class straight to the HTTP status.

create table accounts (
  id          uuid primary key default gen_random_uuid(),
  name        text not null check (length(name) between 1 and 200),
  -- A partner account may provision managed children; flagged by the operator.
  is_partner  boolean not null default false,
  -- Phantom users exist only to own a managed child's key; deleted on release.
  is_phantom  boolean not null default false,
  plan        text not null default 'free' check (plan in ('free', 'starter', 'growth', 'pro')),
  credit_balance integer not null default 0 check (credit_balance >= 0),
  -- Partner-level webhook for child.* events; the secret is sealed (AES-GCM), never plaintext.
  partner_webhook_url text,
  partner_webhook_secret_sealed text,
  created_at  timestamptz not null default now(),
  check (not (is_partner and is_phantom)),
  check ((partner_webhook_url is null) = (partner_webhook_secret_sealed is null))
);

create table api_keys (
  id                 uuid primary key default gen_random_uuid(),
  account_id         uuid not null references accounts (id) on delete restrict,
  -- HMAC-SHA-256 of the plaintext key under the server pepper, hex. The plaintext is never stored.
  key_hash           text not null unique check (key_hash ~ '^[0-9a-f]{64}$'),
  key_prefix         text not null,
  status             text not null default 'active' check (status in ('active', 'suspended', 'revoked')),
  is_partner_master  boolean not null default false,
  parent_api_key_id  uuid references api_keys (id) on delete restrict,
  name               text check (name is null or length(name) between 1 and 200),
  brand_name         text check (brand_name is null or length(brand_name) between 1 and 200),
  -- The child's own visitor-identification webhook (per-child `visitor_identified`).
  webhook_url        text,
  webhook_secret_sealed text,
  created_at         timestamptz not null default now(),
  rotated_at         timestamptz,
  check (not (is_partner_master and parent_api_key_id is not null)),
  check (parent_api_key_id is null or parent_api_key_id <> id),
  check ((webhook_url is null) = (webhook_secret_sealed is null))
);
-- One designated master key per partner account.
create unique index api_keys_one_master_per_account on api_keys (account_id) where is_partner_master;
create index api_keys_parent on api_keys (parent_api_key_id) where parent_api_key_id is not null;

create table websites (
  id                  uuid primary key default gen_random_uuid(),
  api_key_id          uuid not null references api_keys (id) on delete restrict,
  tracking_script_id  uuid not null unique default gen_random_uuid(),
  -- Bare lower-case host: labels of letters, digits and hyphens, at least one dot, no scheme/port/path.
  domain              text not null check (
    length(domain) <= 253
    and domain = lower(domain)
    and domain ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})$'
  ),
  status              text not null default 'active' check (status in ('active', 'inactive')),
  created_at          timestamptz not null default now()
);
-- A tracker domain can be live on only one active website (and so one account).
create unique index websites_domain_live on websites (domain) where status = 'active';
create index websites_by_key on websites (api_key_id);

-- The partner pool: the partner's own subscription.
create table pools (
  id                    uuid primary key default gen_random_uuid(),
  account_id            uuid not null unique references accounts (id) on delete cascade,
  monthly_id_quota      integer not null default 0 check (monthly_id_quota >= 0),
  -- A decrease set by the operator is queued until the next period, like a child's.
  pending_monthly_id_quota integer check (pending_monthly_id_quota >= 0),
  ids_used_this_period  integer not null default 0 check (ids_used_this_period >= 0),
  topup_balance         integer not null default 0 check (topup_balance >= 0),
  current_period_start  timestamptz,
  current_period_end    timestamptz,
  pool_billing_mode     text not null default 'prepaid' check (pool_billing_mode in ('prepaid', 'invoice_monthly')),
  partner_per_id_pence  numeric(12, 4) check (partner_per_id_pence is null or partner_per_id_pence > 0),
  auto_reload_enabled   boolean not null default false,
  auto_reload_threshold_ids integer check (auto_reload_threshold_ids is null or auto_reload_threshold_ids >= 0),
  auto_reload_topup_amount_ids integer check (auto_reload_topup_amount_ids is null or auto_reload_topup_amount_ids > 0),
  payment_method_id     text,
  last_declined_at      timestamptz,
  consecutive_declines  integer not null default 0 check (consecutive_declines >= 0),
  created_at            timestamptz not null default now(),
  -- A prepaid pool can never use more than its quota; monthly-invoice pools may go over (overage is invoiced).
  check (pool_billing_mode = 'invoice_monthly' or ids_used_this_period <= monthly_id_quota),
  check ((current_period_start is null) = (current_period_end is null)),
  check (current_period_end is null or current_period_end > current_period_start)
);

-- A managed child's subscription: monthly allocation from the pool plus IDs it owns.
create table child_subscriptions (
  id                    uuid primary key default gen_random_uuid(),
  api_key_id            uuid not null unique references api_keys (id) on delete cascade,
  kind                  text not null default 'trial_child' check (kind in ('trial_child', 'paid_child')),
  monthly_id_quota      integer not null default 0 check (monthly_id_quota >= 0),
  pending_monthly_id_quota integer check (pending_monthly_id_quota >= 0),
  ids_used_this_period  integer not null default 0 check (ids_used_this_period >= 0),
  topup_balance         integer not null default 0 check (topup_balance >= 0),
  current_period_start  timestamptz not null default now(),
  current_period_end    timestamptz not null,
  status                text not null default 'active' check (status in ('active', 'canceled')),
  id_price_pence_override numeric(12, 4) check (id_price_pence_override is null or id_price_pence_override > 0),
  billing_status        text not null default 'trial',
  payment_subscription_item_id text,
  payment_subscription_id text,
  billing_error         text,
  advance_charge_pi_id  text,
  -- Throttle for child.topup_changed reason=consumption (at most one per 5 minutes).
  last_consumption_event_at timestamptz,
  created_at            timestamptz not null default now(),
  -- A decrease is queued, so usage can never exceed the quota in force.
  check (ids_used_this_period <= monthly_id_quota),
  check (current_period_end > current_period_start)
);

create table topups (
  id                 uuid primary key default gen_random_uuid(),
  pool_id            uuid references pools (id) on delete cascade,
  child_api_key_id   uuid references api_keys (id) on delete set null,
  amount_ids         integer not null check (amount_ids > 0),
  status             text not null check (status in ('pending', 'completed', 'failed', 'refunded')),
  source             text not null check (source in ('operator', 'auto_reload', 'purchase')),
  payment_intent_id  text unique,
  created_at         timestamptz not null default now(),
  check (pool_id is not null or child_api_key_id is not null)
);
create index topups_recent on topups (pool_id, created_at desc);

create table invoices (
  id            uuid primary key default gen_random_uuid(),
  pool_id       uuid not null references pools (id) on delete cascade,
  period_start  timestamptz not null,
  period_end    timestamptz not null,
  ids_used      integer not null check (ids_used >= 0),
  overage_ids   integer not null default 0 check (overage_ids >= 0),
  amount_pence  numeric(14, 4) not null check (amount_pence >= 0),
  status        text not null default 'outstanding' check (status in ('outstanding', 'paid', 'void')),
  created_at    timestamptz not null default now(),
  settled_at    timestamptz,
  check ((status = 'outstanding') = (settled_at is null) or status = 'void')
);
create index invoices_outstanding on invoices (pool_id) where status = 'outstanding';

-- The events outbox. Every child.* event is inserted in the same transaction as the change
-- that causes it; the body is serialised once here so every delivery attempt sends identical bytes.
create table events (
  id                 uuid primary key default gen_random_uuid(),
  partner_account_id uuid references accounts (id) on delete cascade,
  child_api_key_id   uuid,
  destination        text not null default 'partner' check (destination in ('partner', 'child')),
  event              text not null,
  body               text not null,
  created_at         timestamptz not null default now(),
  delivery_status    text not null default 'pending'
                     check (delivery_status in ('pending', 'delivered', 'failed', 'no_destination')),
  attempts           integer not null default 0 check (attempts between 0 and 4),
  next_attempt_at    timestamptz default now(),
  last_attempt_at    timestamptz,
  last_error         text
);
create index events_by_partner on events (partner_account_id, created_at desc);
create index events_due on events (next_attempt_at) where delivery_status = 'pending';
