-- The tracker worker in fewer writes (issue 14, collect).
--
-- Aggregation claimed its events with a lease (one update of every event row), folded them, then
-- marked each folded event in the loop and marked them all identified-queued in a second pass:
-- every event row was written three times after its insert, the last two changing a partial
-- index's predicate (so the table's other indexes were written again), and it was folded into its
-- visitor by three to four statements of its own. Claim and fold are now one transaction: the
-- events are locked with SKIP LOCKED instead of leased (a worker that dies takes its locks with
-- it, so its events are free at once rather than after a lease), folded per visitor by one
-- statement, and marked once, by one statement for the claim.
--
-- Identification settled each visitor in its own transaction, and the worker settles eight at
-- once: every settle of one busy tracker key waited for the key's subscription row (locked by
-- sl_consume_id until the commit) and woke on each commit. sl_settle_identifications settles the
-- results that are ready in one transaction, so the row is locked once for all of them.

alter table tracker_events drop column lease_until;
