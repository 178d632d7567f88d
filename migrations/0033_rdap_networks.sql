-- RDAP's cache (packages/core/src/ip/rdap/): what a registry's RDAP server said about a range of
-- addresses, kept 30 days so that a thousand visitors from one registered network cost one query.
--
-- A row says: every address from start_address to end_address has `registration` as its most
-- specific registration (null: the registry holds none there). A registration that cannot hold
-- smaller ones (an end-user assignment) is one row for its whole range; one that can (an ISP's
-- allocation) is a row per block it was asked about, so customers' assignments inside it are still
-- found. `registration` holds only the facts identification reads (read-network.ts: the range, type,
-- holder's and organisations' names, country, and contacts' roles and domains; no email address,
-- phone number or person's name).

create table rdap_networks (
  start_address  inet not null,
  end_address    inet not null,
  -- The smallest CIDR holding the range: the GiST index finds the rows covering an address with it.
  covering       cidr generated always as (inet_merge(start_address, end_address)) stored,
  registration   jsonb check (registration is null or jsonb_typeof(registration) = 'object'),
  -- The origin that answered (https://rdap.db.ripe.net), for operators reading the table.
  server         text not null check (length(server) between 1 and 300),
  fetched_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  primary key (start_address, end_address),
  check (family(start_address) = family(end_address) and start_address <= end_address),
  check (masklen(start_address) = case family(start_address) when 4 then 32 else 128 end),
  check (masklen(end_address) = case family(end_address) when 4 then 32 else 128 end),
  check (expires_at > fetched_at)
);

create index rdap_networks_covering on rdap_networks using gist (covering inet_ops);
