/*
 * An address to put in place of a visitor's once it is aged or erased from a row that keeps its
 * counts: the next of 100::/64, RFC 6666's discard-only prefix, which no visitor can have. Each call
 * gives a new one, so rows under a unique key (a website's visitors) never collide.
 */
create or replace function sl_anonymous_address() returns inet
language sql volatile as $$
  select '100::'::inet + nextval('anonymous_address_numbers')
$$;
