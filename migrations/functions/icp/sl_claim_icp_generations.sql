-- Due generations, leased to the caller (attempt counted now, so a worker that dies still counts).
create or replace function sl_claim_icp_generations(p_limit integer, p_lease_ms integer) returns table (id uuid, attempt integer)
language sql as $$
  update icps i set generation_lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond',
    generation_attempts = i.generation_attempts + 1
  where i.id in (
    select c.id from icps c
    where c.workflow_status = 'generating' and c.generation_due_at <= now()
      and (c.generation_lease_until is null or c.generation_lease_until < clock_timestamp())
    order by c.generation_due_at
    limit p_limit
    for update skip locked
  )
  returning i.id, i.generation_attempts
$$;
