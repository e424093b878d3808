-- due_levels: the priorities of a queue with lanes that its due tasks hold, highest first:
-- a loose index scan of duetime_tasks_lanes (one seek a level present, whatever each holds).
-- Parameters: :qid.
-- Returns rows: priority.
WITH RECURSIVE levels (p) AS (
    SELECT (SELECT MAX(priority) FROM duetime_tasks
            WHERE qid = :qid AND due_ms IS NOT NULL AND priority IS NOT NULL)
    UNION ALL
    SELECT (SELECT MAX(priority) FROM duetime_tasks
            WHERE qid = :qid AND due_ms IS NOT NULL AND priority IS NOT NULL
              AND priority < levels.p)
    FROM levels
    WHERE levels.p IS NOT NULL
)
SELECT p FROM levels WHERE p IS NOT NULL
