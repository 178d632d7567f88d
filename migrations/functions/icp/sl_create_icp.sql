/*
 * create_icp in one transaction: the plan limit under the account's lock (SL403 naming the plan and
 * its limit), the product's owner (SL404, or SL403 for another account's product), the ICP queued
 * for generation, its usage counted, and, with an idempotency key, the response stored as the
 * key's outcome. p_fields holds only the fields the caller gave. Returns the ICP as JSON.
 */

/*
 * 0015's create_icp, taking an ICP generation from the account's allowance when the caller left any
 * field to the engine (the names are ICP_FIELD_NAMES in icp/schemas.ts). api-icp-action passes no
 * idempotency key: it stores the answer text it sends itself (run-icp-action.ts), so a repeat
 * answers those bytes.
 */
create or replace function sl_create_icp(p_account uuid, p_product uuid, p_fields jsonb, p_threshold integer, p_idempotency_key uuid)
returns jsonb
language plpgsql as $$
declare
  v_plan text;
  v_limit integer;
  v_count integer;
  v_owner uuid;
  v_icp icps;
  v_json jsonb;
begin
  select plan into v_plan from accounts where id = p_account for update;
  select account_id into v_owner from products where id = p_product;
  if v_owner is null then
    raise exception 'no such product %', p_product using errcode = 'SL404';
  elsif v_owner <> p_account then
    raise exception 'product % belongs to another account', p_product using errcode = 'SL403';
  end if;
  v_limit := sl_plan_icp_limit(v_plan);
  select count(*) into v_count from icps where account_id = p_account;
  if v_limit is not null and v_count >= v_limit then
    raise exception 'the % plan allows % ICP%; this account has %: delete one or upgrade the plan',
      v_plan, v_limit, case when v_limit = 1 then '' else 's' end, v_count
      using errcode = 'SL403', detail = jsonb_build_object('plan', v_plan, 'icp_limit', v_limit, 'icp_count', v_count)::text;
  end if;
  if not (p_fields ?& array['name', 'description', 'job_titles', 'pain_points', 'value_drivers', 'industry_focus', 'company_characteristics']) then
    perform sl_take_icp_generation(p_account);
  end if;
  insert into icps (account_id, product_id, name, description, job_titles, pain_points, value_drivers, industry_focus,
                    company_characteristics, given_fields, qualify_threshold, generation_due_at)
  values (
    p_account, p_product,
    coalesce(p_fields ->> 'name', ''), coalesce(p_fields ->> 'description', ''),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'job_titles')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'pain_points')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'value_drivers')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'industry_focus')), '{}'),
    coalesce(p_fields -> 'company_characteristics', '{}'),
    array(select jsonb_object_keys(p_fields) order by 1),
    coalesce(p_threshold, 70), now()
  )
  returning * into v_icp;
  perform sl_count_usage(p_account, 'create_icp', 1);
  v_json := sl_icp_json(v_icp);
  if p_idempotency_key is not null then
    perform sl_complete_idempotent(p_account, p_idempotency_key, 201, (jsonb_build_object('success', true) || v_json)::text);
  end if;
  return v_json;
end
$$;
