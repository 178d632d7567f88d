-- Watched and pinned visitors: visitor-mark sets them, list-visitors and visitors-export filter on them.
--
-- Few visitors of a tracker are ever marked, so `watched=true` / `pinned=true` read them from indexes
-- of the marked rows alone, in the listing's order (newest last_seen, then the address): the page and
-- the exact total cost what is marked, not what the window holds. `watched=false` / `pinned=false`
-- keep the default view's paths and subtract the marked rows of the window, counted by the same
-- indexes (sl_list_visitors).
create index visitors_watched on visitors (website_id, last_seen desc, ip) include (is_pinned)
  where is_watched and identification_id is not null;
create index visitors_pinned on visitors (website_id, last_seen desc, ip) include (is_watched)
  where is_pinned and identification_id is not null;
