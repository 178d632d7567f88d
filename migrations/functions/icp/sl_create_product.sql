-- A product of p_account from the fields given (name required); an unknown account is SL404.
create or replace function sl_create_product(p_account uuid, p_fields jsonb) returns jsonb
language plpgsql as $$
declare
  v products;
begin
  insert into products (account_id, name, url, description, value_propositions, target_customers)
  select a.id, p_fields ->> 'name', p_fields ->> 'url', p_fields ->> 'description',
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'value_propositions')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'target_customers')), '{}')
  from accounts a where a.id = p_account
  returning * into v;
  if v.id is null then
    raise exception 'no such account %', p_account using errcode = 'SL404';
  end if;
  return sl_product_json(v);
end
$$;
