-- wait_slot: a claim left due tasks only in groups at their group_concurrency: the settle
-- that ends a run of the type wakes its workers (gate_woken.sql clears the flag).
-- Parameters: ? qid.
UPDATE duetime_queues SET waiting = 1 WHERE qid = ?
