-- schedule: add tasks, or move and update them when their id exists; wake listeners when
-- the batch holds a task earlier than every task due before it (or when the earliest is
-- due already, since a claim running now may not see this batch yet).
--
-- Scheduling an id again starts a new occurrence: it leaves the dead letters, and its
-- stall count and error are cleared (its failures live in its record, replaced here). A
-- run of the same id still in progress keeps its lease and its outcome will not
-- overwrite the new occurrence. Running it twice gives the same result. Ids are distinct
-- (ON CONFLICT cannot touch a row twice): the caller keeps the last task of an id.
-- For only_new, only_new is true: an id that holds a task (a row with a record) is left
-- alone and not returned.
-- Each task takes the group given (0009_groups.sql: '' is stored as NULL in a queue
-- without groups), and its group's turn comes no later than its due time (_group_ready.sql).
-- Parameters: %(qid)s, %(ids)s, %(dues)s, %(records)s, %(priorities)s, %(groups)s (arrays of
-- one length), %(only_new)s, %(channel)s, %(type)s.
-- Returns rows: the ids written.
WITH head AS (
    SELECT min(due_ms) AS due_ms FROM (
        SELECT due_ms FROM tasks
        WHERE qid = %(qid)s AND due_ms IS NOT NULL
        ORDER BY due_ms LIMIT 1
    ) AS h
), written AS (
    INSERT INTO tasks AS t (qid, id, due_ms, record, priority, grp)
    SELECT %(qid)s, u.id, u.due_ms, u.record,
           -- 0 is stored as NULL in a queue without lanes (0008_priorities.sql)
           CASE WHEN u.priority <> 0 OR (SELECT lanes FROM queues WHERE qid = %(qid)s)
                THEN u.priority END,
           -- '' is stored as NULL in a queue without groups (0009_groups.sql)
           CASE WHEN u.grp <> '' OR (SELECT grouped FROM queues WHERE qid = %(qid)s)
                THEN u.grp END
    FROM unnest(%(ids)s::text[], %(dues)s::bigint[], %(records)s::text[],
                %(priorities)s::smallint[], %(groups)s::text[])
        AS u (id, due_ms, record, priority, grp)
    ON CONFLICT (qid, id) DO UPDATE
    SET due_ms = excluded.due_ms,
        record = excluded.record,
        priority = excluded.priority,
        grp = excluded.grp,
        dead_ms = NULL,
        stalls = 0,
        error = NULL
    WHERE NOT %(only_new)s OR t.record IS NULL
    RETURNING t.id, t.due_ms, t.grp
),
-- include _group_ready.sql
, woken AS (
    SELECT pg_notify(%(channel)s, w.due_ms || ' ' || %(type)s)
    FROM (SELECT min(due_ms) AS due_ms FROM written) AS w, head
    WHERE w.due_ms IS NOT NULL
      AND (head.due_ms IS NULL OR w.due_ms < head.due_ms OR head.due_ms <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
)
SELECT id FROM written WHERE (SELECT count(*) FROM woken) >= 0
