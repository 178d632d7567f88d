-- list-visitors as one SQL function, planned once per connection.
--
-- The listing was one statement sent by the verb inside a transaction that first set
-- plan_cache_mode and jit: five round trips, and a custom plan made for every request (~1 ms of
-- planning for a ~2 ms search at 1M visitors). As a function it is one round trip, and its
-- statement is written so that the one generic plan is right for every request: each way of
-- matching is a branch behind a one-time filter on the parameters (only the branches a request
-- uses run), the address prefix is a range the index can take as a parameter, and the page's rows
-- are looked up by key. It answers the page as JSON text, which the server sends as it is.
-- npm run bench -- visitors has the figures; docs/decisions.md the reasons.

-- list-visitors' lookup_count for a tracker row: the address's identifications on the site (one
-- per billing period), counted as each is made instead of counted again on every listing.
alter table visitors add column identified_count integer not null default 0 check (identified_count >= 0);
update visitors v set identified_count = x.n
from (select website_id, ip, count(*)::integer as n from identifications where status = 'identified' group by website_id, ip) x
where x.website_id = v.website_id and x.ip = v.ip;
alter table visitors add constraint visitors_identified_counted check (identification_id is null or identified_count > 0);
