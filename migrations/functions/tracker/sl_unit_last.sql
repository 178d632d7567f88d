/*
 * The last host address of unit p_unit, so that `ip between unit and sl_unit_last(unit)` is a btree
 * range over visitors (website_id, ip): `ip <<= unit` alone uses the index only for a constant unit.
 */
create or replace function sl_unit_last(p_unit inet) returns inet
language sql immutable parallel safe as $$
  select set_masklen(broadcast(p_unit), case family(p_unit) when 4 then 32 else 128 end)
$$;
