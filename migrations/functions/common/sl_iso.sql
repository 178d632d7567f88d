-- A timestamp as the API writes it: ISO 8601 in UTC with milliseconds (2026-01-31T09:05:00.000Z).
--
-- sl_iso was declared immutable over to_char, which is only stable, so Postgres could not inline
-- it and ran it as a function call per value: two per listed row. Stable is what it is.
create or replace function sl_iso(ts timestamptz) returns text
language sql stable parallel safe as $$
  select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
