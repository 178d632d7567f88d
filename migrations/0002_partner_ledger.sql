-- The ID ledger and the partner lifecycle: consumption, suspension and reactivation, updates,
-- adoption, rotation, transfers, release, top-ups, auto-reload bookkeeping and period rollover.
--
-- Locking: the lock order is written in migrations/functions/README.md.

-- Why a key is suspended: only quota exhaustion is lifted automatically (quota increase, rollover,
-- top-up); a partner's manual suspension stays until the partner changes it.
alter table api_keys add column suspended_reason text
  check (suspended_reason in ('quota_exhausted', 'manual'));
update api_keys set suspended_reason = 'manual' where status = 'suspended';
alter table api_keys add constraint api_keys_suspended_reason_matches
  check ((status = 'suspended') = (suspended_reason is not null));

alter table child_subscriptions drop constraint child_subscriptions_kind_check;
alter table child_subscriptions add constraint child_subscriptions_kind_check
  check (kind in ('trial_child', 'managed_child', 'paid_child'));

alter table pools
  add column payment_customer_id text,
  -- Set while an auto-reload charge is in flight (one per pool); a stale mark expires after 10 minutes.
  add column reload_started_at timestamptz,
  -- IDs consumed beyond quota and top-up on monthly-invoice billing, invoiced at rollover.
  add column overage_ids_this_period integer not null default 0 check (overage_ids_this_period >= 0),
  add constraint pools_overage_only_on_invoice check (pool_billing_mode = 'invoice_monthly' or overage_ids_this_period = 0);

-- Receivers reconcile by the envelope timestamp; within one transaction several events can fall in
-- the same millisecond, so sl_emit (final form in 0003) keeps timestamps strictly increasing per
-- transaction, and `seq` gives the outbox a total order of insertion.
alter table events add column seq bigint generated always as identity;
create unique index events_seq on events (seq);

create table key_rotations (
  id              uuid primary key default gen_random_uuid(),
  api_key_id      uuid not null references api_keys (id) on delete cascade,
  old_key_prefix  text not null,
  rotated_at      timestamptz not null default now()
);
create index key_rotations_recent on key_rotations (api_key_id, rotated_at desc);

-- One row per ID consumed, saying what funded it; the balances are the sum of these movements.
create table id_ledger (
  id                bigint generated always as identity primary key,
  child_api_key_id  uuid,
  pool_id           uuid,
  child_source      text check (child_source in ('quota', 'topup')),
  pool_source       text check (pool_source in ('quota', 'topup', 'overage')),
  created_at        timestamptz not null default now(),
  -- A child's top-up IDs were paid for already; only quota-funded IDs draw on the pool.
  check (child_source is distinct from 'topup' or pool_source is null),
  check (child_source is not null or pool_source is not null)
);
create index id_ledger_child on id_ledger (child_api_key_id);
