-- What collect kept from identification, per website, day (UTC) and reason: bots (stored, never
-- identified) beside the budgets' drops (never stored). For an operator's reading; nothing reads it
-- on a request path. Bots' beacons are counted for as long as raw events are kept (retention).
create view tracker_filtered_beacons as
select website_id, received_on as day, 'bot'::text as reason, count(*)::bigint as beacons
from tracker_events where is_bot group by 1, 2
union all
select website_id, day, reason, beacons from tracker_filtered_daily;
