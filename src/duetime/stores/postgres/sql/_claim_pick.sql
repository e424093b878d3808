-- _claim_pick: the tasks a claim takes (claim.sql, claim_gated.sql), as CTEs after the
-- statement's own "allowed" (one row: n, how many it may take). A queue without lanes
-- (0008_priorities.sql) is claimed by "plain" alone: its earliest due tasks. A queue with
-- lanes is claimed highest priority first, then earliest due: each level's earliest due
-- tasks are locked (up to n a level), and the first n of them all by priority then due
-- time are taken; the others' locks end with the claim's transaction.
plain AS (
    SELECT id FROM tasks
    WHERE qid = %(qid)s AND due_ms <= %(horizon)s
      AND NOT (SELECT lanes FROM queues WHERE qid = %(qid)s)
    ORDER BY due_ms, id
    LIMIT (SELECT n FROM allowed)
    FOR UPDATE SKIP LOCKED
), levels (p) AS (
    -- a queue with lanes: the levels its due tasks hold, highest first, an index probe a
    -- level (tasks_lanes), whatever each level holds
    (SELECT priority FROM tasks
     WHERE qid = %(qid)s AND due_ms IS NOT NULL AND priority IS NOT NULL
       AND (SELECT lanes FROM queues WHERE qid = %(qid)s)
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT t.priority FROM tasks AS t
            WHERE t.qid = %(qid)s AND t.due_ms IS NOT NULL AND t.priority IS NOT NULL
              AND t.priority < l.p
            ORDER BY t.priority DESC LIMIT 1)
    FROM levels AS l
    WHERE l.p IS NOT NULL
), laned AS (
    SELECT x.priority, x.id, x.due_ms
    FROM levels AS l
    CROSS JOIN LATERAL (
        SELECT priority, id, due_ms FROM tasks
        WHERE qid = %(qid)s AND priority = l.p AND priority IS NOT NULL
          AND due_ms <= %(horizon)s
        ORDER BY due_ms, id
        LIMIT (SELECT n FROM allowed)
        FOR UPDATE SKIP LOCKED
    ) AS x
    WHERE l.p IS NOT NULL
), picked AS (
    SELECT id FROM plain
    UNION ALL
    (SELECT id FROM laned
     ORDER BY priority DESC, due_ms, id
     LIMIT (SELECT n FROM allowed))
)
