-- Issue 13, the ICP work around 0015: products as the API shows them and their writes, and what
-- the scoring worker needs (icp/score-identifications.ts) to walk an account's identifications.
--
-- Lock order: the products row alone (create and update touch nothing else).

-- The product as the API shows it (api-icp-action create_product / update_product / list_products).
create function sl_product_json(p products) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', p.id, 'name', p.name, 'url', p.url, 'description', p.description,
    'value_propositions', to_jsonb(p.value_propositions), 'target_customers', to_jsonb(p.target_customers),
    'created_at', sl_iso(p.created_at), 'updated_at', sl_iso(p.updated_at))
$$;

-- A product of p_account from the fields given (name required); an unknown account is SL404.
create function sl_create_product(p_account uuid, p_fields jsonb) returns jsonb
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

/*
 * Changes the fields present in p_fields (a JSON null clears url or description) of a product of
 * p_account. An unknown product is SL404, another account's SL403.
 */
create function sl_update_product(p_account uuid, p_product uuid, p_fields jsonb) returns jsonb
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

-- The backfill after an activation walks a website's identified identifications in id order.
create index identifications_identified_by_id on identifications (website_id, id) where status = 'identified';
