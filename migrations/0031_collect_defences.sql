-- collect's defences (docs/decisions.md, "collect's defences").
--
-- 1. The page-host rule once (sl_tracker_accepts_host), so the body's url and the browser's Origin
--    (or Referer) are judged by the same rule: the website's domain and its subdomains, or the
--    account's allowed_domains when it set any.
-- 2. sl_collect_events takes each beacon's origin_host (null when the browser sent neither header)
--    and drops a beacon whose origin host the rule refuses, like a foreign page host.
-- 3. sl_tracker_visitor_status: before a beacon is appended, whether it would be stored and whether
--    its address is a new visitor of the website (no identification of its unit — the address, or
--    an IPv6 /64 — this period: it may use an ID), which is what collect's per-website budget counts.
-- 4. tracker_filtered_daily: beacons dropped by collect's budgets, per website, day (UTC) and
--    reason, written a moment later in batches (sl_record_tracker_filtered); the view
--    tracker_filtered_beacons puts bots' beacons (stored, is_bot) beside them.

-- Beacons collect dropped over a budget, per website, day (UTC) and reason: `address_budget` (the
-- client address's beacons a minute) or `website_budget` (the website's new visitors' beacons a
-- minute). Not a ledger: counted in memory and added a moment later (write-behind.ts).
create table tracker_filtered_daily (
  website_id  uuid not null references websites (id) on delete cascade,
  day         date not null,
  reason      text not null check (reason in ('address_budget', 'website_budget')),
  beacons     bigint not null check (beacons > 0),
  primary key (website_id, day, reason)
);
