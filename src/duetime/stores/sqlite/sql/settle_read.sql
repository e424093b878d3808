-- settle_read: the state of the tasks the outcomes of one settle are about, read before
-- any write of it (every outcome of a batch is judged against the same snapshot). One
-- row of JSON, so that the store's thread steps once for the batch, not once an outcome.
-- CROSS JOIN keeps json_each the outer loop: one index seek per outcome.
-- Parameters: :qid, :ids (a JSON array of the outcomes' task ids).
-- Returns one row: a JSON array with one [n, rid, token, due, dead] per id found: n its
-- index in :ids, token the lease holder (NULL when none, or when not an integer), due 1
-- when the task is due (it was rescheduled while it ran), dead 1 when it is dead.
SELECT json_group_array(json_array(
    j.key,
    t.rid,
    iif(typeof(t.token) = 'integer', t.token, NULL),
    t.due_ms IS NOT NULL,
    t.dead_ms IS NOT NULL
))
FROM json_each(:ids) AS j CROSS JOIN duetime_tasks AS t
WHERE t.qid = :qid AND t.id = j.value
