-- What collect kept from identification, per website, day (UTC) and reason: bots (stored, never
-- identified) and beacons a traffic rule excluded (stored, `excluded_cidr` or `excluded_path`,
-- never identified) beside the budgets' drops (never stored). For an operator's reading; nothing
-- reads it on a request path. Stored beacons are counted for as long as raw events are kept (retention).
create view tracker_filtered_beacons as
select website_id, received_on as day, 'bot'::text as reason, count(*)::bigint as beacons
from tracker_events where is_bot group by 1, 2
union all
select website_id, received_on as day, 'excluded_' || excluded_by as reason, count(*)::bigint as beacons
from tracker_events where excluded_by is not null group by 1, 2, 3
union all
select website_id, day, reason, beacons from tracker_filtered_daily;
