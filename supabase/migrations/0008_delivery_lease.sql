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

drop function sl_claim_deliveries(timestamptz, integer, uuid, boolean, integer, integer);
drop function sl_record_delivery(uuid, integer, timestamptz, integer, text, integer);

/*
 * Claims due deliveries for owner p_owner, leased for p_lease_ms from the database's clock. First
 * attempts (attempts = 0) are never capped; retries are limited to p_retry_cap claimed per
 * destination URL in the minute before the schedule's clock (a retry left out by the cap stays
 * pending and keeps its attempt). Retry claims are serialised by an advisory lock so two replicas
 * cannot both fill the same URL's cap. Returns what to send, with the sealed secret.
 */
create function sl_claim_deliveries(
  p_owner uuid, p_now timestamptz, p_limit integer, p_partner uuid, p_first_only boolean, p_retry_cap integer, p_lease_ms integer
) returns table (event_id uuid, event text, body text, attempt integer, url text, secret_sealed text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_clock timestamptz := clock_timestamp();
  -- To the millisecond, like every time the API shows (and sl_emit's).
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', v_clock));
  v_ids uuid[];
begin
  -- Destinations removed since emission: nothing to send, ever.
  update events e set delivery_status = 'no_destination', lease_until = null, lease_owner = null
  where e.delivery_status = 'pending' and e.next_attempt_at <= v_now
    and (p_partner is null or e.partner_account_id = p_partner)
    and not sl_event_has_destination(e.destination, e.partner_account_id, e.child_api_key_id);

  -- First attempts.
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
        when 'partner' then a.partner_webhook_url else k.webhook_url end as url,
      case c.destination
        when 'partner' then a.partner_webhook_secret_sealed else k.webhook_secret_sealed end as secret_sealed
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
 * The owner's leases on what it has not recorded yet run p_lease_ms from now (the database's clock).
 * Returns the events the owner still holds: one missing was taken over by another sender after the
 * lease ran out, or is locked by a claim that is taking it over, and is no longer the caller's to
 * send. A lease that ran out but was not taken over is still the owner's, and is renewed. SKIP LOCKED:
 * a renewal never waits for a claim, so the two cannot deadlock.
 */
create function sl_renew_deliveries(p_owner uuid, p_lease_ms integer) returns table (event_id uuid)
language sql as $$
  update events e set lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond'
  where e.id in (
    select o.id from events o
    where o.lease_owner = p_owner and o.delivery_status = 'pending'
    for update skip locked
  )
  returning e.id
$$;

/*
 * The owner gives back claimed events it did not send: their leases end now, no attempt is counted
 * (events.attempts is unchanged) and the unfinished attempt-log row goes, so the release uses none of
 * the URL's retry cap. Events the caller no longer owns are left alone, and so are ones a claim has
 * locked to take over (SKIP LOCKED, as in renewal). Returns how many were released.
 */
create function sl_release_deliveries(p_owner uuid, p_events uuid[]) returns integer
language sql as $$
  with released as (
    update events e set lease_until = null, lease_owner = null
    where e.id in (
      select o.id from events o
      where o.id = any(p_events) and o.lease_owner = p_owner and o.delivery_status = 'pending'
      for update skip locked
    )
    returning e.id, e.attempts
  ), unlogged as (
    delete from webhook_attempts a using released r
    where a.event_id = r.id and a.attempt = r.attempts + 1 and a.finished_at is null
    returning a.id
  )
  select count(*)::int from released
$$;

/*
 * Records one attempt's outcome, if p_owner still holds the event's lease; otherwise changes nothing
 * and returns null. 2xx → delivered. Otherwise the next attempt is due 1, 5 or 30 minutes after this
 * one; after the 4th the event stays `failed` and is never retried automatically. p_now null is the
 * database's clock. Idempotent: a second record of the same attempt changes nothing.
 */
create function sl_record_delivery(
  p_event uuid, p_attempt integer, p_owner uuid, p_now timestamptz, p_status_code integer, p_error text, p_duration_ms integer
) returns text
language plpgsql as $$
declare
  -- To the millisecond, like every time the API shows (and sl_emit's).
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', clock_timestamp()));
  v_ok boolean := p_status_code between 200 and 299;
  v_status text;
begin
  update events set
    attempts = p_attempt,
    last_attempt_at = v_now,
    last_error = case when v_ok then null else coalesce(p_error, 'HTTP ' || p_status_code) end,
    lease_until = null,
    lease_owner = null,
    delivery_status = case when v_ok then 'delivered' when p_attempt >= 4 then 'failed' else 'pending' end,
    delivered_at = case when v_ok then v_now else null end,
    next_attempt_at = case
      when v_ok or p_attempt >= 4 then null
      else v_now + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[p_attempt] end
  where id = p_event and attempts = p_attempt - 1 and delivery_status = 'pending' and lease_owner = p_owner
  returning delivery_status into v_status;

  if v_status is not null then
    update webhook_attempts set finished_at = v_now, status_code = p_status_code, error = p_error,
      duration_ms = p_duration_ms, succeeded = v_ok
    where event_id = p_event and attempt = p_attempt;
  end if;
  return v_status;
end
$$;
