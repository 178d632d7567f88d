/*
 * The path of a page's URL, as a traffic rule's `path` is matched against it: what follows the host
 * up to the query or fragment, as the browser sent it (not decoded, case kept); '/' when empty.
 */
create or replace function sl_url_path(p_url text) returns text
language sql immutable as $$
  select coalesce(nullif(substring(p_url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*([^?#]*)'), ''), '/')
$$;
