/*
 * Stores a generated draft: only the fields the caller did not give are written. The ICP becomes
 * `generated` (review stays as it is) and the account hears icp.generated. A settle for an ICP no
 * longer generating (deleted, or settled by a worker that took over) changes nothing: false.
 */
create or replace function sl_settle_icp_generation(p_id uuid, p_draft jsonb, p_engine text) returns boolean
language plpgsql as $$
declare
  v_icp icps;
  g text[];
begin
  select * into v_icp from icps where id = p_id and workflow_status = 'generating' for update;
  if v_icp.id is null then
    return false;
  end if;
  g := v_icp.given_fields;
  update icps set
    name = case when 'name' = any(g) then name else p_draft ->> 'name' end,
    description = case when 'description' = any(g) then description else p_draft ->> 'description' end,
    job_titles = case when 'job_titles' = any(g) then job_titles else array(select jsonb_array_elements_text(p_draft -> 'job_titles')) end,
    pain_points = case when 'pain_points' = any(g) then pain_points else array(select jsonb_array_elements_text(p_draft -> 'pain_points')) end,
    value_drivers = case when 'value_drivers' = any(g) then value_drivers else array(select jsonb_array_elements_text(p_draft -> 'value_drivers')) end,
    industry_focus = case when 'industry_focus' = any(g) then industry_focus else array(select jsonb_array_elements_text(p_draft -> 'industry_focus')) end,
    company_characteristics = case when 'company_characteristics' = any(g) then company_characteristics else p_draft -> 'company_characteristics' end,
    engine = p_engine, workflow_status = 'generated', generation_due_at = null, generation_lease_until = null,
    updated_at = now()
  where id = p_id
  returning * into v_icp;
  perform sl_emit(v_icp.account_id, null, 'icp.generated',
    jsonb_build_object('icp_id', v_icp.id, 'name', v_icp.name, 'product_id', v_icp.product_id, 'generated_by', p_engine), 'account');
  return true;
end
$$;
