/*
 * In a partner account only the master key acts on the account. A CHECK cannot see the account's
 * partner flag, so this trigger holds it whenever a key is written into an account or given a scope:
 * a key inserted without a scope gets the one its account allows ('websites' in a partner account
 * unless it is the master, else 'account'), and a write that would give a partner account a second
 * key to it fails as a constraint violation (23514), like a CHECK. (The operator has no command
 * that flags an existing account as a partner, so an account's flag does not change under its keys.)
 */
create or replace function sl_key_scope() returns trigger
language plpgsql as $$
declare
  v_partner boolean := exists (select 1 from accounts a where a.id = new.account_id and a.is_partner);
begin
  if new.scope is null then
    new.scope := case when v_partner and not new.is_partner_master then 'websites' else 'account' end;
  end if;
  if new.scope = 'account' and not new.is_partner_master and v_partner then
    raise exception 'key % of partner account % must be scoped to its websites: only the master key acts on a partner account',
      new.id, new.account_id
      using errcode = '23514', constraint = 'api_keys_partner_scope';
  end if;
  return new;
end
$$;

create trigger api_keys_partner_scope
  before insert or update of scope, account_id, is_partner_master on api_keys
  for each row
  execute function sl_key_scope();
