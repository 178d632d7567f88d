/*
 * The owner gives back claimed events it did not send: their leases end now, no attempt is counted
 * (events.attempts is unchanged) and the unfinished attempt-log row goes, so the release uses none of
 * the URL's retry cap. Events the caller no longer owns are left alone, and so are ones a claim has
 * locked to take over (SKIP LOCKED, as in renewal). Returns how many were released.
 */
create or replace function sl_release_deliveries(p_owner uuid, p_events uuid[]) returns integer
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
