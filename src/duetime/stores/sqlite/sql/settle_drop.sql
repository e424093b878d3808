-- settle_drop: "done" outcomes for tasks neither due nor dead, all or nothing: when the
-- token of every outcome holds its task's lease and none of those tasks is due (it was
-- rescheduled while it ran) or dead, the runs end and the tasks (record, stalls, error)
-- go with them, in one statement; otherwise nothing is deleted, and the caller judges the
-- outcomes one by one. A statement on its own is atomic: the common settle runs it
-- outside a transaction, so that the store's thread steps once for the batch, its
-- commit included. CROSS JOIN keeps json_each the outer loop: one index seek per outcome.
-- Parameters: :qid, :claims (a JSON object: each outcome's task id, with its token; ids
-- distinct), :n (how many ids :claims holds).
-- Row count: :n when every task went, else 0. (The statement starts with DELETE, not
-- WITH, for Python's sqlite3 to count its rows.)
DELETE FROM duetime_tasks
WHERE rid IN (
    WITH held AS MATERIALIZED (
        SELECT t.rid
        FROM json_each(:claims) AS j CROSS JOIN duetime_tasks AS t
        WHERE t.qid = :qid AND t.id = j.key AND t.token = j.value
          AND t.due_ms IS NULL AND t.dead_ms IS NULL
    )
    SELECT rid FROM held WHERE (SELECT count(*) FROM held) = :n
)
