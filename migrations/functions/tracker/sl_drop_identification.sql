/* Drops a pending identification whose key can no longer identify (suspended or revoked): no lookup, nothing used. */
create or replace function sl_drop_identification(p_id uuid) returns void
language sql as $$
  delete from identifications where id = p_id and status = 'pending'
$$;
