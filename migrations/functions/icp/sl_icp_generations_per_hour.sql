-- ICP generations an account may start in any hour (docs/decisions.md, "ICP generations per hour").
create or replace function sl_icp_generations_per_hour() returns integer
language sql immutable as $$
  select 20
$$;
