/*
 * Claims due deliveries for owner p_owner, leased for p_lease_ms from the database's clock. First
 * attempts (attempts = 0) are never capped; retries are limited to p_retry_cap claimed per
 * destination URL in the minute before the schedule's clock (a retry left out by the cap stays
 * pending and keeps its attempt). Retry claims are serialised by an advisory lock so two replicas
 * cannot both fill the same URL's cap. Events whose destination is gone are settled as
 * no_destination, never sent. Returns what to send, with the sealed secret. An integration's
 * delivery has no URL of its own to show: its `url` is sl_integration_url's label (the cap and the
 * attempts' log go by it), and its secret is the integration's sealed webhook URL or token.
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
        select e.id, case e.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url
          when 'integration' then sl_integration_url(g.kind, g.id, g.status) else k.webhook_url end as url
        from events e
        left join accounts a on a.id = e.partner_account_id
        left join api_keys k on k.id = e.child_api_key_id
        left join integrations g on g.id = e.integration_id
        where e.delivery_status = 'pending' and e.attempts = 0 and e.next_attempt_at <= v_due
          and (e.lease_until is null or e.lease_until < v_clock) and e.id <> all(v_ids)
        order by e.next_attempt_at, e.seq
        limit p_limit - v_kept
        for update of e skip locked
      ) f;
    else
      select array_agg(f.id), array_agg(f.id) filter (where f.url is null) into v_found, v_gone from (
        select e.id, case e.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url
          when 'integration' then sl_integration_url(g.kind, g.id, g.status) else k.webhook_url end as url
        from events e
        left join accounts a on a.id = e.partner_account_id
        left join api_keys k on k.id = e.child_api_key_id
        left join integrations g on g.id = e.integration_id
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
      left join integrations g on g.id = c.integration_id
      where c.delivery_status = 'pending' and c.attempts > 0 and c.next_attempt_at <= v_due
        and (c.lease_until is null or c.lease_until < v_clock)
        and (p_partner is null or c.partner_account_id = p_partner)
        and case c.destination when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url
          when 'integration' then sl_integration_url(g.kind, g.id, g.status) else k.webhook_url end is null
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
              when 'integration' then (select sl_integration_url(g.kind, g.id, g.status) from integrations g where g.id = e.integration_id)
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
    returning e.id, e.event, e.body, e.attempts + 1 as attempt, e.destination, e.partner_account_id, e.child_api_key_id, e.integration_id, e.seq
  ), resolved as (
    select c.*, case c.destination
        when 'partner' then a.partner_webhook_url when 'account' then a.webhook_url
        when 'integration' then sl_integration_url(g.kind, g.id, g.status) else k.webhook_url end as url,
      case c.destination
        when 'partner' then a.partner_webhook_secret_sealed when 'account' then a.webhook_secret_sealed
        when 'integration' then g.secret_sealed else k.webhook_secret_sealed end as secret_sealed
    from claimed c
    left join accounts a on a.id = c.partner_account_id
    left join api_keys k on k.id = c.child_api_key_id
    left join integrations g on g.id = c.integration_id
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
