-- reap: end the expired leases of a type (at most %(batch)s of them, earliest first, and
-- none another claim is reaping), as the first step of a claim.
--
-- Each expired run gets a verdict:
--   ended         the task was rescheduled (it is due) or cancelled (no record) while it
--                 ran: the lease just ends;
--   at_most_once  at-most-once delivery: to the dead letters, never to run again;
--   stalled_out   its stalls, one more now, exceed max_stalls: to the dead letters;
--   requeue       one more stall, and due again at the due time it was claimed at (so
--                 it keeps its occurrence, and a series its phase).
--
-- The rows are found by their primary key (= ANY of the expired ids, an array whose
-- length the planner does not see), so that the join with the verdicts never turns into
-- a scan of the whole type.
-- Parameters: %(qid)s, %(now)s (ms), %(max_stalls)s, %(at_most_once)s (boolean),
-- %(batch)s.
-- A task due again keeps its group, whose turn comes no later than its due time
-- (_group_ready.sql).
-- Returns one row per reaped lease: id, whether the row is now vacant (neither due nor
-- dead: delete it with vacate.sql), and for the run history the verdict, the record, the
-- stalls before this one and the due time it was claimed at.
WITH expired AS (
    SELECT id, stalls, claimed_due_ms,
           CASE WHEN due_ms IS NOT NULL OR record IS NULL THEN 'ended'
                WHEN %(at_most_once)s THEN 'at_most_once'
                WHEN stalls + 1 > %(max_stalls)s THEN 'stalled_out'
                ELSE 'requeue' END AS verdict
    FROM tasks
    WHERE qid = %(qid)s AND deadline_ms <= %(now)s
    ORDER BY deadline_ms, id
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), reaped AS (
UPDATE tasks AS t
SET token = NULL,
    claimed_due_ms = NULL,
    deadline_ms = NULL,
    stalls = t.stalls + (v.verdict IN ('requeue', 'stalled_out'))::integer,
    due_ms = CASE v.verdict WHEN 'requeue' THEN t.claimed_due_ms ELSE t.due_ms END,
    dead_ms = CASE WHEN v.verdict IN ('at_most_once', 'stalled_out') THEN %(now)s
                   ELSE t.dead_ms END,
    error = CASE v.verdict
        WHEN 'at_most_once' THEN 'lease expired; not run again (at-most-once delivery)'
        WHEN 'stalled_out' THEN 'stalled: its lease expired ' || (t.stalls + 1) || ' times'
        ELSE t.error END
FROM expired AS v
WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT id FROM expired)) AND t.id = v.id
RETURNING t.id, t.due_ms IS NULL AND t.dead_ms IS NULL AS vacant, v.verdict, t.record,
          v.stalls, v.claimed_due_ms, t.due_ms, t.grp
), written AS (
    SELECT due_ms, grp FROM reaped WHERE verdict = 'requeue'
),
-- include _group_ready.sql
SELECT id, vacant, verdict, record, stalls, claimed_due_ms FROM reaped
