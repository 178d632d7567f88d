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

-- An event emitted when its destination has no webhook is never sent.
create or replace function sl_event_has_destination(p_destination text, p_partner uuid, p_child uuid)
returns boolean
language sql stable as $$
  select case p_destination
    when 'partner' then exists (select 1 from accounts where id = p_partner and partner_webhook_url is not null)
    else exists (select 1 from api_keys where id = p_child and webhook_url is not null)
  end
$$;

create or replace function sl_emit(p_partner uuid, p_child uuid, p_event text, p_data jsonb, p_destination text default 'partner')
returns uuid
language plpgsql as $$
declare
  v_id uuid;
  v_at timestamptz := date_trunc('milliseconds', clock_timestamp());
  v_last text := current_setting('sl.last_event_at', true);
begin
  if v_last is not null and v_last <> '' and v_at <= v_last::timestamptz then
    v_at := v_last::timestamptz + interval '1 millisecond';
  end if;
  perform set_config('sl.last_event_at', v_at::text, true);
  insert into events (partner_account_id, child_api_key_id, destination, event, body, delivery_status, next_attempt_at)
  values (
    p_partner, p_child, p_destination, p_event,
    jsonb_build_object('event', p_event, 'timestamp', sl_iso(v_at), 'data', p_data)::text,
    case when sl_event_has_destination(p_destination, p_partner, p_child) then 'pending' else 'no_destination' end,
    now()
  )
  returning id into v_id;
  return v_id;
end
$$;

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

/*
 * Claims due deliveries. First attempts (attempts = 0) are never capped; retries are limited to
 * p_retry_cap claimed per destination URL in the minute before p_now (a retry left out by the cap
 * stays pending and keeps its attempt). Retry claims are serialised by an advisory lock so two
 * replicas cannot both fill the same URL's cap. Returns what to send, with the sealed secret.
 */
create function sl_claim_deliveries(
  p_now timestamptz, p_limit integer, p_partner uuid, p_first_only boolean, p_retry_cap integer, p_lease_seconds integer
) returns table (event_id uuid, event text, body text, attempt integer, url text, secret_sealed text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
begin
  -- Destinations removed since emission: nothing to send, ever.
  update events e set delivery_status = 'no_destination', lease_until = null
  where e.delivery_status = 'pending' and e.next_attempt_at <= p_now
    and (p_partner is null or e.partner_account_id = p_partner)
    and not sl_event_has_destination(e.destination, e.partner_account_id, e.child_api_key_id);

  -- First attempts.
  select array_agg(id) into v_ids from (
    select e.id from events e
    where e.delivery_status = 'pending' and e.attempts = 0 and e.next_attempt_at <= p_now
      and (e.lease_until is null or e.lease_until < p_now)
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
          where e.delivery_status = 'pending' and e.attempts > 0 and e.next_attempt_at <= p_now
            and (e.lease_until is null or e.lease_until < p_now)
            and (p_partner is null or e.partner_account_id = p_partner)
        ) d
        left join (
          select a.url, count(*)::int as n from webhook_attempts a
          where a.is_retry and a.claimed_at > p_now - interval '1 minute'
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
    update events e set lease_until = p_now + make_interval(secs => p_lease_seconds)
    where e.id = any(v_ids) and e.delivery_status = 'pending' and (e.lease_until is null or e.lease_until < p_now)
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
    select r.id, r.attempt, r.url, r.attempt > 1, p_now from resolved r
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
 * Records one attempt's outcome. 2xx → delivered. Otherwise the next attempt is due 1, 5 or 30
 * minutes after this one; after the 4th the event stays `failed` and is never retried automatically.
 * Idempotent: a second record of the same attempt changes nothing.
 */
create function sl_record_delivery(
  p_event uuid, p_attempt integer, p_now timestamptz, p_status_code integer, p_error text, p_duration_ms integer
) returns text
language plpgsql as $$
declare
  v_ok boolean := p_status_code between 200 and 299;
  v_status text;
begin
  update webhook_attempts set finished_at = p_now, status_code = p_status_code, error = p_error,
    duration_ms = p_duration_ms, succeeded = v_ok
  where event_id = p_event and attempt = p_attempt;

  update events set
    attempts = p_attempt,
    last_attempt_at = p_now,
    last_error = case when v_ok then null else coalesce(p_error, 'HTTP ' || p_status_code) end,
    lease_until = null,
    delivery_status = case when v_ok then 'delivered' when p_attempt >= 4 then 'failed' else 'pending' end,
    delivered_at = case when v_ok then p_now else null end,
    next_attempt_at = case
      when v_ok or p_attempt >= 4 then null
      else p_now + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[p_attempt] end
  where id = p_event and attempts = p_attempt - 1 and delivery_status = 'pending'
  returning delivery_status into v_status;
  return v_status;
end
$$;

/*
 * Beyond the spec: a partner replays one of its events — a new first attempt of the same stored
 * body (same bytes, so receivers deduplicate), with the full retry schedule again.
 */
create function sl_replay_event(p_partner uuid, p_event uuid) returns table (delivery_status text)
language plpgsql as $$
#variable_conflict use_column
declare
  e events;
begin
  select * into e from events where id = p_event for update;
  if e.id is null then
    raise exception 'no event %', p_event using errcode = 'SL404';
  end if;
  if e.partner_account_id is distinct from p_partner then
    raise exception 'event % belongs to another partner', p_event using errcode = 'SL403';
  end if;
  if not sl_event_has_destination(e.destination, e.partner_account_id, e.child_api_key_id) then
    raise exception 'there is no webhook configured to replay event % to', p_event using errcode = 'SL409';
  end if;
  if e.delivery_status = 'pending' then
    raise exception 'event % is still being delivered', p_event using errcode = 'SL409';
  end if;
  update events set delivery_status = 'pending', attempts = 0, next_attempt_at = now(), lease_until = null,
    last_error = null, delivered_at = null
  where id = p_event;
  delete from webhook_attempts where event_id = p_event;
  return query select 'pending'::text;
end
$$;
