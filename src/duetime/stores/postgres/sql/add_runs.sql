-- add_runs: record finished runs in their type's history, a row each, and trim it in the
-- same statement as settle_drop_logged.sql does.
-- Parameters: %(qid)s, %(cutoff)s (ms), %(keep)s, %(worker)s (NULL: unknown); arrays of
-- one length: %(ids)s, %(occurrences)s, %(attempts)s, %(starts)s (NULL: unknown),
-- %(finishes)s, %(outcomes)s, %(errors)s, %(traces)s, %(results)s.
-- Returns one row: how many runs were added.
WITH base AS (
    SELECT coalesce(max(added), 0) AS added FROM runs WHERE qid = %(qid)s
), logged AS (
    INSERT INTO runs
        (qid, added, base_ms, keep, worker, id, occurrence_ms, attempt, started_ms, outcome,
         error, trace, result)
    SELECT %(qid)s, base.added + r.ord, r.finished_ms, %(keep)s, %(worker)s, r.id,
           r.occurrence_ms, r.attempt, r.started_ms, r.outcome, r.error, r.trace, r.result
    FROM base, unnest(%(ids)s::text[], %(occurrences)s::bigint[], %(attempts)s::bigint[],
                      %(starts)s::bigint[], %(finishes)s::bigint[], %(outcomes)s::text[],
                      %(errors)s::text[], %(traces)s::text[], %(results)s::text[])
        WITH ORDINALITY AS r (id, occurrence_ms, attempt, started_ms, finished_ms, outcome,
                              error, trace, result, ord)
    RETURNING 1
), aged AS (
    DELETE FROM runs WHERE qid = %(qid)s AND base_ms < %(cutoff)s
), over AS (
    DELETE FROM runs
    WHERE qid = %(qid)s
      AND added <= (SELECT added FROM base) + cardinality(%(ids)s::text[]) - %(keep)s
)
SELECT count(*) FROM logged
