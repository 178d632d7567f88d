-- A live sender must never lose its claim (issue 10 item 4). A sweep claimed up to 500 events for
-- 60 s, sent them 64 at a time with up to 10 s each, and leased later batches from the sweep's start
-- time, so events still queued in a live process ran out of lease, were claimed by another replica
-- and were delivered twice, with no crash involved.
--
-- Every claim now has an owner: one id per claimed batch, kept in events.lease_owner while the lease
-- lasts. Only the owner may renew its leases while it sends (sl_renew_deliveries), give back what it
-- will not send in time (sl_release_deliveries) or record an attempt (sl_record_delivery), so a
-- sender whose lease was taken over can neither clear the new owner's lease nor overwrite its
-- attempt. Leases are set and judged by the database's clock only; p_now, when given (tests pin it),
-- is the clock of the schedule — when an attempt is due, the retry cap's minute, the times recorded —
-- and the database's clock otherwise, so replicas with skewed clocks agree.
--
-- sl_claim_deliveries and sl_record_delivery change their signatures, so they are dropped and created
-- again: a process running the previous code must be stopped before this migration runs.
--
-- Locking is as in 0003: a claim locks the first attempts it takes with SKIP LOCKED, then takes the
-- retry advisory lock, then updates what it chose. Renew and release lock only rows the caller owns,
-- with SKIP LOCKED, so they never wait for a claim; a record locks one row. So none of them can
-- deadlock with a claim.

alter table events add column lease_owner uuid;
-- A lease taken by the previous code has no owner; give it one nobody holds, so it runs out and the
-- event is claimed again, as after a crash.
update events set lease_owner = gen_random_uuid() where lease_until is not null;
alter table events add constraint events_lease_has_owner check ((lease_until is null) = (lease_owner is null));
-- Renewal and release find a batch's events by owner, every few seconds while it sends.
create index events_lease_owner on events (lease_owner) where lease_owner is not null;
