-- Engine work is paid for, or limited, before the engine is asked.
--
-- api-full-request holds its cost when it starts (credit_holds): the credits leave the balance at
-- once, under the account's row lock with the guard `balance >= cost`, so requests racing for the
-- last credits cannot all reach the engine; the hold turns into the usual debits in the transaction
-- that stores the message, or goes back to the balance when the work fails, or when it expires
-- (its worker died) — at the account's next hold, or by the minute sweep.
--
-- ICP generations (create_icp leaving fields to the engine, regenerate_icp) are limited per account
-- per rolling hour (icp_generation_log), counted under the account's row lock.
--
-- Lock order, as in 0014 and 0015: the accounts row before anything it owns (its holds, its
-- generation log, its ICPs). sl_icp_action therefore locks the account before the ICP when it regenerates.

create table credit_holds (
  account_id       uuid not null references accounts (id) on delete cascade,
  -- One hold per request: the x-idempotency-key of the api-full-request holding it.
  idempotency_key  uuid not null,
  amount           integer not null check (amount > 0),
  created_at       timestamptz not null default clock_timestamp(),
  -- The hold's worker is past its idempotency lease after this: it died, and the hold goes back.
  expires_at       timestamptz not null,
  primary key (account_id, idempotency_key),
  check (expires_at > created_at)
);
create index credit_holds_expiry on credit_holds (expires_at);

-- ICP generations started per account: the rows of the last hour are the allowance in use.
create table icp_generation_log (
  account_id  uuid not null references accounts (id) on delete cascade,
  started_at  timestamptz not null default now()
);
create index icp_generation_log_by_account on icp_generation_log (account_id, started_at);
