/*
 * What an identification is keyed on for address p_ip: the /64 network for IPv6, the address itself
 * for IPv4 and for an IPv4-mapped IPv6 address (::ffff:a.b.c.d; collect stores those unmapped, and
 * their /64 would be every mapped address at once).
 */
create or replace function sl_identification_unit(p_ip inet) returns inet
language sql immutable parallel safe as $$
  select case when family(p_ip) = 6 and not p_ip <<= '::ffff:0:0/96'::inet then network(set_masklen(p_ip, 64))::inet else p_ip end
$$;
