-- list-visitors' total at 10M visitors: the pairs of since's own hour counted by the minute.
--
-- The total subtracts the pairs of a tracker row and a lookup of its address (migration 0034). The
-- whole hours after since's are summed from counts; the pairs whose older row falls in since's own
-- hour were found by probing the key's lookups for every identified visitor of that hour, so the
-- default view grew with the visitors an hour holds (at 10M visitors over 90 days, about 4,600
-- probes and most of the request). The same pairs are now also counted per UTC minute
-- (`overlap_minute`, its `hour` the minute's start): the whole minutes of since's hour are summed
-- and only the rows of since's own minute are probed.
alter table visitor_listing_counts drop constraint visitor_listing_counts_kind_check;
alter table visitor_listing_counts drop constraint visitor_listing_counts_hour_check;
alter table visitor_listing_counts
  add constraint visitor_listing_counts_kind_check check (kind in ('visitors', 'lookups', 'overlap', 'overlap_minute')),
  add constraint visitor_listing_counts_hour_check
    check (hour = date_trunc(case when kind = 'overlap_minute' then 'minute' else 'hour' end, hour, 'UTC'));

-- The pairs already there, by minute (the triggers count from here on, as in 0034).
insert into visitor_listing_counts (scope_id, kind, hour, n)
select v.website_id, 'overlap_minute', date_trunc('minute', least(v.last_seen, a.last_seen), 'UTC'), count(*)
from visitors v join websites w on w.id = v.website_id join api_lookups a on a.api_key_id = w.api_key_id and a.ip = v.ip
where v.identification_id is not null group by 1, 3;
