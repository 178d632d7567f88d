-- Every process that serves IP lookups holds the imported ranges and company records in memory
-- (packages/host/src/ip-data.ts). Whoever changes them (an operator import run from another
-- machine, a record another replica learned, a hand-written statement) tells the others here, and
-- each reloads the layers. Statement triggers: one notification per statement, not per row, and
-- Postgres folds identical ones within a transaction into one.
create or replace function sl_notify_ip_data_changed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('sl_ip_data_changed', tg_table_name);
  return null;
end
$$;

create trigger ip_ranges_changed
  after insert or update or delete or truncate on ip_ranges
  for each statement
  execute function sl_notify_ip_data_changed();

create trigger ip_companies_changed
  after insert or update or delete or truncate on ip_companies
  for each statement
  execute function sl_notify_ip_data_changed();
