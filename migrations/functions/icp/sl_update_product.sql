/*
 * Changes the fields present in p_fields (a JSON null clears url or description) of a product of
 * p_account. An unknown product is SL404, another account's SL403.
 */
create or replace function sl_update_product(p_account uuid, p_product uuid, p_fields jsonb) returns jsonb
language plpgsql as $$
declare
  v products;
begin
  -- No key update: ICPs and messages referring to the product are not held up by it.
  select * into v from products where id = p_product for no key update;
  if v.id is null then
    raise exception 'no such product %', p_product using errcode = 'SL404';
  elsif v.account_id <> p_account then
    raise exception 'product % belongs to another account', p_product using errcode = 'SL403';
  end if;
  update products set
    name = case when p_fields ? 'name' then p_fields ->> 'name' else name end,
    url = case when p_fields ? 'url' then p_fields ->> 'url' else url end,
    description = case when p_fields ? 'description' then p_fields ->> 'description' else description end,
    value_propositions = case when p_fields ? 'value_propositions'
      then array(select jsonb_array_elements_text(p_fields -> 'value_propositions')) else value_propositions end,
    target_customers = case when p_fields ? 'target_customers'
      then array(select jsonb_array_elements_text(p_fields -> 'target_customers')) else target_customers end,
    updated_at = now()
  where id = p_product
  returning * into v;
  return sl_product_json(v);
end
$$;
