-- Processes that cache key records (packages/core/src/auth-cache.ts) clear them when told that a
-- key or its account changed in a way authentication reads: a key's status, hash, role, parent or
-- account, a deleted key, or an account's partner flag. Row triggers with WHEN clauses fire only on
-- real changes, so the frequent updates that leave those columns alone (usage counters, webhook
-- settings) never cost the caches their contents. Row triggers do not see TRUNCATE, so it has its
-- own statement triggers. Postgres folds identical notifications within a transaction into one, so
-- a sweep that changes many keys sends one per table.
create or replace function sl_notify_auth_changed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('sl_auth_changed', tg_table_name);
  return null;
end
$$;

create trigger api_keys_auth_changed
  after update on api_keys
  for each row
  when (old.status is distinct from new.status
        or old.key_hash is distinct from new.key_hash
        or old.is_partner_master is distinct from new.is_partner_master
        or old.parent_api_key_id is distinct from new.parent_api_key_id
        or old.account_id is distinct from new.account_id
        or old.scope is distinct from new.scope)
  execute function sl_notify_auth_changed();

create trigger api_keys_auth_deleted
  after delete on api_keys
  for each row
  execute function sl_notify_auth_changed();

create trigger accounts_auth_changed
  after update on accounts
  for each row
  when (old.is_partner is distinct from new.is_partner)
  execute function sl_notify_auth_changed();

create trigger accounts_auth_deleted
  after delete on accounts
  for each row
  execute function sl_notify_auth_changed();

create trigger api_keys_auth_truncated
  after truncate on api_keys
  for each statement
  execute function sl_notify_auth_changed();

create trigger accounts_auth_truncated
  after truncate on accounts
  for each statement
  execute function sl_notify_auth_changed();
