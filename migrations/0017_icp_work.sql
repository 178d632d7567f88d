-- Issue 13, the ICP work around 0015: products as the API shows them and their writes, and what
-- the scoring worker needs (icp/score-identifications.ts) to walk an account's identifications.
--
-- Lock order: the products row alone (create and update touch nothing else).

-- The backfill after an activation walks a website's identified identifications in id order.
create index identifications_identified_by_id on identifications (website_id, id) where status = 'identified';
