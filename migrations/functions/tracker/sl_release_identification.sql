/* Gives a claimed identification back after its lookup failed: claimable again after a minute per attempt so far. */
create or replace function sl_release_identification(p_id uuid) returns void
language sql as $$
  update identifications set lease_until = clock_timestamp() + interval '1 minute' * attempts where id = p_id and status = 'pending'
$$;
