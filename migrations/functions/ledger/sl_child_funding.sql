-- What a managed child's consumption decides from, read without a lock (sl_consume_id,
-- sl_consume_ids): the child's quota, top-up and status, its key's status, and its partner's pool
-- (absent when the partner has none). One row per managed child, by its key.
create view sl_child_funding as
select s.api_key_id, s.id as sub_id, s.status as sub_status, s.ids_used_this_period as used,
       s.monthly_id_quota as quota, s.topup_balance as topup, k.status as key_status, m.account_id as partner,
       p.id as pool_id, p.ids_used_this_period as pool_used, p.monthly_id_quota as pool_quota,
       p.topup_balance as pool_topup, p.pool_billing_mode as pool_mode
from child_subscriptions s
join api_keys k on k.id = s.api_key_id
join api_keys m on m.id = k.parent_api_key_id
left join pools p on p.account_id = m.account_id;
