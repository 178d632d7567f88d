-- The ICP as the API shows it (spec: ICP), plus what generation and scoring add.
create or replace function sl_icp_json(i icps) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', i.id, 'name', i.name, 'description', i.description, 'product_id', i.product_id,
    'job_titles', to_jsonb(i.job_titles), 'pain_points', to_jsonb(i.pain_points),
    'value_drivers', to_jsonb(i.value_drivers), 'industry_focus', to_jsonb(i.industry_focus),
    'company_characteristics', i.company_characteristics,
    'workflow_status', i.workflow_status, 'review_status', i.review_status,
    'qualify_threshold', i.qualify_threshold, 'generated_by', i.engine, 'failure_reason', i.failure_reason,
    'created_at', sl_iso(i.created_at), 'updated_at', sl_iso(i.updated_at))
$$;
