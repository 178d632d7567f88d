-- Webhook delivery from the events outbox: claims with leases, attempts on the 1/5/30-minute
-- schedule, a cap of 5 retried events per destination URL per minute, and an attempt log.
--
-- At least once: an attempt is claimed (leased) before it is sent and recorded after; a process that
-- dies in between leaves the lease to expire, and the event is claimed and sent again with the same
-- attempt number. The lease (60 s) outlives the 10 s receiver timeout, so a live sender always records
-- before anyone else may claim.

alter table events
  add column lease_until timestamptz,
  add column delivered_at timestamptz;

create table webhook_attempts (
  id          bigint generated always as identity primary key,
  event_id    uuid not null references events (id) on delete cascade,
  attempt     integer not null check (attempt between 1 and 4),
  url         text not null,
  is_retry    boolean not null,
  claimed_at  timestamptz not null,
  finished_at timestamptz,
  status_code integer,
  error       text,
  duration_ms integer check (duration_ms >= 0),
  succeeded   boolean,
  unique (event_id, attempt)
);
-- The per-URL retry cap counts claimed retries in the last minute.
create index webhook_attempts_retry_window on webhook_attempts (url, claimed_at) where is_retry;

create index events_claimable on events (next_attempt_at, seq) where delivery_status = 'pending';
