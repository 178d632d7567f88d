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

/*
 * Claims due deliveries for owner p_owner, leased for p_lease_ms from the database's clock. First
 * attempts (attempts = 0) are never capped; retries are limited to p_retry_cap claimed per
 * destination URL in the minute before the schedule's clock (a retry left out by the cap stays
 * pending and keeps its attempt). Retry claims are serialised by an advisory lock so two replicas
 * cannot both fill the same URL's cap. Events whose destination is gone are settled as
 * no_destination, never sent. Returns what to send, with the sealed secret.
 */
create or replace function sl_claim_deliveries(
  p_owner uuid, p_now timestamptz, p_limit integer, p_partner uuid, p_first_only boolean, p_retry_cap integer, p_lease_ms integer
) returns table (event_id uuid, event text, body text, attempt integer, url text, secret_sealed text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_clock timestamptz := clock_timestamp();
  -- To the millisecond, like every time the API shows (and sl_emit's).
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', v_clock));
  -- What is due, to the microsecond: an event emitted earlier in the same millisecond is due too (it
  -- was not, by v_now, for a claim that came within a millisecond of the emit).
  v_due timestamptz := coalesce(p_now, v_clock);
  -- Everything chosen so far; those settled as no_destination are left out by the final update.
  v_ids uuid[] := '{}';
  v_found uuid[];
  v_gone uuid[];
  v_kept integer := 0;
  v_retries uuid[];
begin
  -- First attempts, in order, skipping what another claim has locked, each with its destination's
  -- URL as the final statement resolves it. Those without one (the destination was removed since
  -- emission) are settled as no_destination, and as many more taken, until the claim is full or
  -- nothing is left.
  loop
    -- Two statements, not one with `p_partner is null or …`: a cached generic plan of that could
    -- take no index in order, and sorted every due event of the partner for each claim.
    if p_partner is null then
      select array_agg(f.id), array_agg(f.id) filter (where f.url is null) into v_found, v_gone from (
        select e.id, case e.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url else k.webhook_url end as url
        from events e
        left join accounts a on a.id = e.partner_account_id
        left join api_keys k on k.id = e.child_api_key_id
        where e.delivery_status = 'pending' and e.attempts = 0 and e.next_attempt_at <= v_due
          and (e.lease_until is null or e.lease_until < v_clock) and e.id <> all(v_ids)
        order by e.next_attempt_at, e.seq
        limit p_limit - v_kept
        for update of e skip locked
      ) f;
    else
      select array_agg(f.id), array_agg(f.id) filter (where f.url is null) into v_found, v_gone from (
        select e.id, case e.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url else k.webhook_url end as url
        from events e
        left join accounts a on a.id = e.partner_account_id
        left join api_keys k on k.id = e.child_api_key_id
        where e.partner_account_id = p_partner and e.delivery_status = 'pending' and e.attempts = 0 and e.next_attempt_at <= v_due
          and (e.lease_until is null or e.lease_until < v_clock) and e.id <> all(v_ids)
        order by e.next_attempt_at, e.seq
        limit p_limit - v_kept
        for update of e skip locked
      ) f;
    end if;
    exit when v_found is null;
    v_ids := v_ids || v_found;
    v_kept := v_kept + cardinality(v_found) - coalesce(cardinality(v_gone), 0);
    exit when v_gone is null;
    update events e set delivery_status = 'no_destination', lease_until = null, lease_owner = null where e.id = any(v_gone);
    exit when v_kept >= p_limit;
  end loop;

  if not p_first_only and v_kept < p_limit then
    perform pg_advisory_xact_lock(7311995002);
    -- Retries whose destination was removed since they were emitted: nothing to send, ever.
    update events e set delivery_status = 'no_destination', lease_until = null, lease_owner = null
    from (
      select c.id from events c
      left join accounts a on a.id = c.partner_account_id
      left join api_keys k on k.id = c.child_api_key_id
      where c.delivery_status = 'pending' and c.attempts > 0 and c.next_attempt_at <= v_due
        and (c.lease_until is null or c.lease_until < v_clock)
        and (p_partner is null or c.partner_account_id = p_partner)
        and case c.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url else k.webhook_url end is null
    ) gone
    where e.id = gone.id;
    v_retries := (
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
          where e.delivery_status = 'pending' and e.attempts > 0 and e.next_attempt_at <= v_due
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
        limit p_limit - v_kept
      ) c
    );
    -- Locked before they are changed, in one order and without waiting (the first attempts are
    -- locked already): a retry that a late record is finishing right now is left to the next sweep.
    -- So a claim never waits for a row lock, and never deadlocks with a record.
    v_ids := v_ids || coalesce((
      select array_agg(id) from (
        select e.id from events e where e.id = any(v_retries) order by e.id for update skip locked
      ) mine
    ), '{}');
  end if;

  return query
  with claimed as (
    update events e set lease_until = v_clock + p_lease_ms * interval '1 millisecond', lease_owner = p_owner
    from unnest(v_ids) as mine(id)
    where e.id = mine.id and e.delivery_status = 'pending' and (e.lease_until is null or e.lease_until < v_clock)
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
 * Records the outcomes of many attempts at once: p_attempts is a JSON array of
 * {event_id, owner, attempt, status_code, error, duration_ms}. An attempt counts only if its owner
 * still holds the event's lease (and so the event is pending: events_leased_only_while_pending) and
 * it is the event's next attempt; then 2xx → delivered, otherwise the next attempt is due 1, 5 or
 * 30 minutes later, and after the 4th the event stays `failed` and is never retried automatically.
 * All at one time: p_now, or the database's clock. Returns every given event with its
 * delivery_status after the record, or null where nothing was recorded (its lease was taken over,
 * or this attempt was recorded already: a second record of it changes nothing).
 */
create function sl_record_deliveries(p_now timestamptz, p_attempts jsonb)
returns table (event_id uuid, delivery_status text)
language plpgsql as $$
#variable_conflict use_column
declare
  -- To the millisecond, like every time the API shows (and sl_emit's).
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', clock_timestamp()));
  v_ids uuid[];
begin
  select array_agg(i.event_id) into v_ids from jsonb_to_recordset(p_attempts) as i(event_id uuid);
  -- In id order, as every record locks (see the header).
  perform 1 from events e where e.id = any(v_ids) order by e.id for update;

  return query
  with input as (
    select i.*, i.status_code between 200 and 299 as succeeded
    from jsonb_to_recordset(p_attempts) as i(event_id uuid, owner uuid, attempt integer, status_code integer, error text, duration_ms integer)
  ), recorded as (
    update events e set
      attempts = i.attempt,
      last_attempt_at = v_now,
      last_error = case when i.succeeded then null else coalesce(i.error, 'HTTP ' || i.status_code) end,
      lease_until = null,
      lease_owner = null,
      delivery_status = case when i.succeeded then 'delivered' when i.attempt >= 4 then 'failed' else 'pending' end,
      delivered_at = case when i.succeeded then v_now else null end,
      next_attempt_at = case
        when i.succeeded or i.attempt >= 4 then null
        else v_now + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[i.attempt] end
    from input i
    -- By primary key. Naming the status here as well would let the planner, without statistics
    -- (a new table), pick an index of pending events and read all of them.
    where e.id = any(v_ids) and e.id = i.event_id and e.lease_owner = i.owner and e.attempts = i.attempt - 1
    returning e.id, e.delivery_status, i.attempt, i.status_code, i.error, i.duration_ms, i.succeeded
  ), logged as (
    update webhook_attempts w set finished_at = v_now, status_code = r.status_code, error = r.error,
      duration_ms = r.duration_ms, succeeded = r.succeeded
    from recorded r
    where w.event_id = r.id and w.attempt = r.attempt
    returning w.event_id
  )
  select i.event_id, r.delivery_status from input i left join recorded r on r.id = i.event_id;
end
$$;

/* One attempt's record: sl_record_deliveries of one, so the rules are written once. */
create or replace function sl_record_delivery(
  p_event uuid, p_attempt integer, p_owner uuid, p_now timestamptz, p_status_code integer, p_error text, p_duration_ms integer
) returns text
language sql as $$
  select r.delivery_status from sl_record_deliveries(p_now, jsonb_build_array(jsonb_build_object(
    'event_id', p_event, 'owner', p_owner, 'attempt', p_attempt, 'status_code', p_status_code, 'error', p_error,
    'duration_ms', p_duration_ms))) r
$$;
