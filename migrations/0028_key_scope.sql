-- What a key may do: act on its account, or only read its own websites.
--
-- A key released from a partner (partner-release-child) goes back to the partner's account as a
-- direct tracker, and its plaintext is still with the former customer. Without a scope it was a key
-- of the partner's account like any other: it listed the partner's own trackers, read their
-- identifications, spent the account's credits, made connect links and, through a user connected
-- with one, changed the account's settings. The spec keeps the released tracker working; it does not
-- hand its holder the account.
--
-- scope = 'account': the key acts on its account (connect links, x-user-id calls, paid lookups) and
--   reads every website of it: a direct account's key, a partner's master key, a managed child's key
--   (its account is its own phantom user).
-- scope = 'websites': the key reads the websites it owns (list-visitors, identification-list) and its
--   own lookups, and nothing else of the account. Every key of a partner account but the master is
--   one: a released child, and a tracker key the operator made for the partner (create-key).
-- Its tracker keeps working either way: collect and the script are keyed by tracking id, not by key.

-- No column default: a new key's scope follows from its account (sl_key_scope below), so an insert
-- that names none (sl_create_child, the operator's keys) gets the right one.
alter table api_keys add column scope text;

-- Backfill by the same rule: in a partner account only the master acts on the account (released
-- children and the operator's tracker keys there become 'websites'); direct accounts and children
-- keep 'account', which is what every key could do before.
update api_keys k set scope = case when a.is_partner and not k.is_partner_master then 'websites' else 'account' end
from accounts a
where a.id = k.account_id;

alter table api_keys
  alter column scope set not null,
  add constraint api_keys_scope_known check (scope in ('account', 'websites')),
  -- The designated master key is the partner account's own key.
  add constraint api_keys_master_acts_on_account check (not is_partner_master or scope = 'account'),
  -- A managed child's account is its own phantom user: its key acts on it, as it always has.
  add constraint api_keys_child_acts_on_its_account check (parent_api_key_id is null or scope = 'account');
