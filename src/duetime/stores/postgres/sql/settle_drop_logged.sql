-- settle_drop_logged: settle_drop.sql, with the runs of the outcomes it keeps recorded in
-- the type's history and the history trimmed, in the same statement (as add_runs.sql
-- does). An outcome without a run (%(finishes)s NULL) is settled and not recorded.
-- Parameters: %(qid)s, %(cutoff)s (ms), %(keep)s, %(worker)s; arrays of one length:
-- %(ids)s, %(tokens)s, %(occurrences)s, %(attempts)s, %(starts)s, %(finishes)s,
-- %(outcomes)s, %(errors)s, %(traces)s.
-- Returns rows: id, token of each task deleted.
WITH dropped AS (
    DELETE FROM tasks AS t
    USING unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS o (id, token)
    WHERE t.qid = %(qid)s AND t.id = o.id AND t.token = o.token
      AND t.due_ms IS NULL AND t.dead_ms IS NULL
    RETURNING t.id, t.token
), logged AS (
    INSERT INTO runs
        (qid, id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace,
         worker)
    SELECT %(qid)s, r.id, r.occurrence_ms, r.attempt, r.started_ms, r.finished_ms,
           r.outcome, r.error, r.trace, %(worker)s
    FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(occurrences)s::bigint[],
                %(attempts)s::bigint[], %(starts)s::bigint[], %(finishes)s::bigint[],
                %(outcomes)s::text[], %(errors)s::text[], %(traces)s::text[])
        AS r (id, token, occurrence_ms, attempt, started_ms, finished_ms, outcome, error,
              trace)
    JOIN dropped AS d ON d.id = r.id AND d.token = r.token
    WHERE r.finished_ms IS NOT NULL
    ORDER BY r.finished_ms DESC
    LIMIT %(keep)s
    RETURNING 1
), aged AS (
    DELETE FROM runs WHERE qid = %(qid)s AND finished_ms < %(cutoff)s
), over AS (
    DELETE FROM runs
    WHERE qid = %(qid)s AND (finished_ms, n) IN (
        SELECT finished_ms, n FROM runs
        WHERE qid = %(qid)s
        ORDER BY finished_ms DESC, n DESC
        OFFSET greatest(%(keep)s - (SELECT count(*) FROM logged), 0)
    )
)
SELECT id, token FROM dropped
