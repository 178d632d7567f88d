-- The product as the API shows it (api-icp-action create_product / update_product / list_products).
create or replace function sl_product_json(p products) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', p.id, 'name', p.name, 'url', p.url, 'description', p.description,
    'value_propositions', to_jsonb(p.value_propositions), 'target_customers', to_jsonb(p.target_customers),
    'created_at', sl_iso(p.created_at), 'updated_at', sl_iso(p.updated_at))
$$;
