-- add_runs: record finished runs in their type's history, and trim it in the same
-- statement to the runs that finished at or after %(cutoff)s and to the newest
-- %(keep)s (the trims see the history as it was before this statement: of the runs given,
-- the newest %(keep)s are added, and the count trim leaves room for them).
-- Parameters: %(qid)s, %(cutoff)s (ms), %(keep)s, %(worker)s (NULL: unknown); arrays of
-- one length: %(ids)s, %(occurrences)s, %(attempts)s, %(starts)s (NULL: unknown),
-- %(finishes)s, %(outcomes)s, %(errors)s, %(traces)s.
-- Returns one row: how many runs were added.
WITH logged AS (
    INSERT INTO runs
        (qid, id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace,
         worker)
    SELECT %(qid)s, r.id, r.occurrence_ms, r.attempt, r.started_ms, r.finished_ms,
           r.outcome, r.error, r.trace, %(worker)s
    FROM unnest(%(ids)s::text[], %(occurrences)s::bigint[], %(attempts)s::bigint[],
                %(starts)s::bigint[], %(finishes)s::bigint[], %(outcomes)s::text[],
                %(errors)s::text[], %(traces)s::text[])
        AS r (id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace)
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
SELECT count(*) FROM logged
