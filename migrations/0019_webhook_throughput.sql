-- Webhook throughput (issue 14). 10,000 first attempts to one receiver went out at 779–934 a second;
-- a profile of the engine showed its process idle most of the time, waiting on two statements:
--
-- * the claim, 37–45 ms for 64 events with a 10,000-event backlog: it began by checking the
--   destination of every due pending event of the partner (10,000 calls of sl_event_has_destination
--   per claim of 64), chose its 64 by sorting every due event of the partner (the query's
--   `p_partner is null or …` kept any index from giving them in order once plpgsql cached a generic
--   plan), and found the chosen rows again with a scan of the pending events;
-- * the record, one statement and one commit per attempt, 64 per claimed batch.
--
-- Now:
-- 1. A claim checks the destination of the first attempts it takes, as it takes them (those whose
--    destination was removed since emission are settled as no_destination there, and as many more
--    taken), through the same joins that resolve the URL it sends to, in the statement that takes them. Retries (a sweep, once a
--    minute) keep the backlog-wide check, as a join. An event without a destination is still never
--    sent; it is settled when it comes up rather than when any claim for its partner runs.
-- 2. A partner's due first attempts come in order from one index (events_first_attempts), so a
--    claim reads the 64 it takes and the few in flight before them, not the backlog. events_due,
--    which events_claimable covers, goes.
-- 3. sl_record_deliveries records many attempts in one statement, by primary key; the engine
--    writes the attempts that finish while one record is on its way together in the next.
--    sl_record_delivery keeps its signature and rules, and is now one call of it.
--
-- Locking (as 0008, plus): a claim locks everything it takes with SKIP LOCKED (retries too, now) and
-- so never waits for a row; a record locks its rows in id order, so two records that meet on an
-- event taken over between them (the old owner's, refused, and the new owner's) cannot deadlock.

create index events_first_attempts on events (partner_account_id, next_attempt_at, seq)
  where delivery_status = 'pending' and attempts = 0;
-- events_claimable (0003) has the same rows and starts with the same column: this one only cost a
-- write on every emit, claim and retry.
drop index events_due;

-- Held by construction since 0008 (every change out of pending clears the lease); written down, so a
-- record can find its rows by lease owner without also naming the status.
alter table events add constraint events_leased_only_while_pending check (lease_owner is null or delivery_status = 'pending') not valid;
alter table events validate constraint events_leased_only_while_pending;
