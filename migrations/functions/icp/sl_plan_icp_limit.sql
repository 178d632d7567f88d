-- The ICP limit of a plan (spec: Free 1, Starter 3, Growth 6, Pro unlimited); null is no limit.
create or replace function sl_plan_icp_limit(p_plan text) returns integer
language sql immutable as $$
  select case p_plan when 'free' then 1 when 'starter' then 3 when 'growth' then 6 else null end
$$;
