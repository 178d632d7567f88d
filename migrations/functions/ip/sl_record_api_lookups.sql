-- ip-to-company and ip-to-best-fit lookups recorded in batches (issue 14).
--
-- Every identified lookup, cached answers too, recorded itself with sl_record_api_lookup (0011):
-- one upsert per request, run after the response. A client repeating one address hits one row, so
-- under load those upserts queued for its lock and for the pool's connections faster than they
-- finished, and the queue of waiting statements grew without bound (the process's memory with it,
-- and every other query waited behind it). Lookups now gather in the process (write-behind.ts) and
-- one statement a second adds them: a row's count grows by the lookups it gathered.

/*
 * Records a batch of identified lookups: rows of {api_key_id, ip, domain, company_name, confidence,
 * country, lookups}. The last report of a key and address wins its company fields. Rows of keys
 * deleted since, and text past the table's limits, are skipped, so one stale report cannot fail the
 * batch it rides in. Returns the rows written.
 */
create or replace function sl_record_api_lookups(p_rows jsonb) returns integer
language sql as $$
  with input as (
    select (r ->> 'api_key_id')::uuid as api_key_id, (r ->> 'ip')::inet as ip, r ->> 'domain' as domain,
           r ->> 'company_name' as company_name, (r ->> 'confidence')::real as confidence, r ->> 'country' as country,
           (r ->> 'lookups')::integer as lookups, n
    from jsonb_array_elements(p_rows) with ordinality as t (r, n)
  ), merged as (
    -- Two spellings of one address (IPv6) are one row: an upsert may touch a row only once.
    select distinct on (api_key_id, ip) api_key_id, ip, domain, company_name, confidence, country,
           sum(lookups) over (partition by api_key_id, ip) as lookups
    from input
    where lookups > 0 and length(domain) between 1 and 253 and length(company_name) between 1 and 300
      and confidence between 0 and 1 and country ~ '^([A-Z]{2})?$'
    order by api_key_id, ip, n desc
  ), applied as (
    insert into api_lookups as a (api_key_id, ip, domain, company_name, confidence, country, label_id, lookup_count)
    select m.api_key_id, m.ip, m.domain, m.company_name, m.confidence, m.country,
           sl_search_label(concat_ws(' ', m.company_name, m.domain)), m.lookups
    from merged m
    where exists (select 1 from api_keys k where k.id = m.api_key_id)
    -- One order for every writer, so two processes flushing overlapping batches cannot deadlock.
    order by m.api_key_id, m.ip
    on conflict (api_key_id, ip) do update
      set last_seen = greatest(a.last_seen, now()), lookup_count = a.lookup_count + excluded.lookup_count,
          domain = excluded.domain, company_name = excluded.company_name, confidence = excluded.confidence,
          country = excluded.country, label_id = excluded.label_id
    returning 1
  )
  select count(*)::int from applied
$$;
