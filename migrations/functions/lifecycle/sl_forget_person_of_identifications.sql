/*
 * Removes the person from the given identifications: an `individual` becomes the `company`
 * identification it also is (its company fields stay), its person fields cleared; the visitors that
 * show it get the label without the person's name, and the label that named the person (a row of
 * search_labels, which holds the name as text) is deleted unless another identification of the same
 * profile still shows it. Returns the
 * identifications changed, the visitors relabelled and the labels deleted. Identifications are
 * locked before their visitors, in id order; the settle never waits for an identification while it
 * holds a visitor (migrations/functions/README.md, lock order).
 */
create or replace function sl_forget_person_of_identifications(p_ids uuid[])
returns table (identifications_changed integer, visitors_relabelled integer, labels_deleted integer)
language plpgsql as $$
declare
  v_ids uuid[];
  v_labels text[];
  v_urls text[];
begin
  select array_agg(i.id order by i.id), array_agg(left(lower(concat_ws(' ', i.person_linkedin_name, i.company_name, i.domain)), 1000)),
         array_agg(distinct i.person_linkedin_url)
  into v_ids, v_labels, v_urls
  from (
    select x.id, x.person_linkedin_name, x.company_name, x.domain, x.person_linkedin_url from identifications x
    where x.id = any(p_ids) and x.identification_type = 'individual'
    order by x.id for update
  ) i;
  if v_ids is null then
    identifications_changed := 0; visitors_relabelled := 0; labels_deleted := 0;
    return next;
    return;
  end if;
  update identifications
  set identification_type = 'company', person_linkedin_url = null, person_linkedin_name = null,
      person_linkedin_title = null, person_linkedin_company = null
  where id = any(v_ids);
  get diagnostics identifications_changed = row_count;
  update visitors v
  set label_id = sl_search_label(concat_ws(' ', i.company_name, i.domain))
  from identifications i
  where i.id = any(v_ids) and v.identification_id = i.id;
  get diagnostics visitors_relabelled = row_count;
  -- A label is shared by every row that shows the same text. One that names this person is still
  -- another row's while an identification of the same profile (another website, another account)
  -- shows it: those are found by the profile URL, by index, rather than by reading every visitor.
  delete from search_labels l
  where l.label = any(v_labels)
    and not exists (
      select 1 from identifications i
      where i.person_linkedin_url = any(v_urls) and i.identification_type = 'individual'
        and left(lower(concat_ws(' ', i.person_linkedin_name, i.company_name, i.domain)), 1000) = l.label);
  get diagnostics labels_deleted = row_count;
  return next;
end
$$;
