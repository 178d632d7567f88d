/*
 * Claims up to p_limit pending identifications, oldest first, leased for p_lease_ms on the
 * database's clock (a dead worker's claim is claimable again after it), with what the worker needs:
 * the owner's account (whose lookup cache it reads) and the key's status now.
 */
create or replace function sl_claim_identifications(p_limit integer, p_lease_ms integer)
returns table (id uuid, ip text, api_key_id uuid, account_id uuid, key_status text, attempts integer)
language sql as $$
  with claimed as (
    update identifications i
    set lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0), attempts = i.attempts + 1
    where i.id in (
      select c.id from identifications c
      where c.status = 'pending' and (c.lease_until is null or c.lease_until < clock_timestamp())
      order by c.created_at
      limit p_limit
      for update skip locked
    )
    returning i.id, i.ip, i.api_key_id, i.attempts
  )
  select c.id, host(c.ip), c.api_key_id, k.account_id, k.status, c.attempts from claimed c join api_keys k on k.id = c.api_key_id
$$;
