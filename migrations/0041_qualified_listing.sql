-- identification-list's `qualified=true` page, read in list order from the qualifying scores alone.
-- Probing each of the website's newest identifications for a qualifying score read five rows for
-- every one listed (about one in five qualifies) and was most of a page's time at 1M
-- identifications. A score now carries its identification's website and creation time (neither
-- ever changes for an identification), so the qualifying scores of one website are an index in the
-- list's order (newest first, then by id): a page reads the scores it shows and those of the
-- paused ICPs beside them, and nothing else.
alter table icp_scores add column website_id uuid, add column listed_at timestamptz;
update icp_scores s set website_id = i.website_id, listed_at = i.created_at from identifications i where i.id = s.identification_id;
alter table icp_scores alter column website_id set not null, alter column listed_at set not null;
create index icp_scores_listed on icp_scores (website_id, listed_at desc, identification_id) include (icp_id) where qualified;
