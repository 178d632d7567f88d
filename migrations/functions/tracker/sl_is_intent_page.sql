/* Whether a page's path says buying intent. */
create or replace function sl_is_intent_page(p_url text) returns boolean
language sql immutable as $$
  select coalesce(substring(p_url from '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*(/[^?#]*)?'), '')
         ~* '/(pricing|plans|demo|book-a-demo|request-a-demo|contact-sales)(/|$)'
$$;
