/* The label for text p_text (lower-cased), added if new. Concurrent first uses agree on one id. */
create or replace function sl_search_label(p_text text) returns bigint
language plpgsql as $$
declare
  v_label text := left(lower(p_text), 1000);
  v_id bigint;
begin
  select id into v_id from search_labels where label = v_label;
  if v_id is null then
    insert into search_labels (label) values (v_label) on conflict (label) do nothing returning id into v_id;
    if v_id is null then
      select id into v_id from search_labels where label = v_label;
    end if;
  end if;
  return v_id;
end
$$;
