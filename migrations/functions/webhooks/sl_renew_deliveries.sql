/*
 * The owner's leases on what it has not recorded yet run p_lease_ms from now (the database's clock).
 * Returns the events the owner still holds: one missing was taken over by another sender after the
 * lease ran out, or is locked by a claim that is taking it over, and is no longer the caller's to
 * send. A lease that ran out but was not taken over is still the owner's, and is renewed. SKIP LOCKED:
 * a renewal never waits for a claim, so the two cannot deadlock.
 */
create or replace function sl_renew_deliveries(p_owner uuid, p_lease_ms integer) returns table (event_id uuid)
language sql as $$
  update events e set lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond'
  where e.id in (
    select o.id from events o
    where o.lease_owner = p_owner and o.delivery_status = 'pending'
    for update skip locked
  )
  returning e.id
$$;
