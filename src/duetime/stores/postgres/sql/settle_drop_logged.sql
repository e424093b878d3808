-- settle_drop_logged: settle_drop.sql, with the runs of the outcomes it keeps recorded in
-- the type's history as one row (a batch: their lines, in the order given; see
-- stores/history.py), and the history trimmed, in the same statement: by age, and to the
-- rows holding its newest %(keep)s runs (the trims see the history as it was before this
-- statement; the new row is the newest). An outcome without a line is settled and not
-- recorded.
-- Parameters: %(qid)s, %(now)s (the batch's base, ms), %(channel)s, %(type)s,
-- %(cutoff)s (ms), %(keep)s, %(worker)s; arrays of one length: %(ids)s, %(tokens)s,
-- %(lines)s (NULL: no run).
-- Returns what settle_drop.sql returns.
WITH
-- include _settle_gone.sql
, kept AS (
    SELECT r.line, r.ord
    FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(lines)s::text[])
        WITH ORDINALITY AS r (id, token, line, ord)
    JOIN gone AS d ON d.id = r.id AND d.token = r.token
    WHERE r.line IS NOT NULL
), total AS (
    SELECT coalesce((SELECT max(added) FROM runs WHERE qid = %(qid)s), 0) + count(*) AS added,
           count(*) AS runs,
           string_agg(line, E'\n' ORDER BY ord) AS batch
    FROM kept
), logged AS (
    INSERT INTO runs (qid, added, base_ms, keep, worker, batch)
    SELECT %(qid)s, added, %(now)s, %(keep)s, %(worker)s, batch FROM total WHERE runs > 0
), aged AS (
    DELETE FROM runs WHERE qid = %(qid)s AND base_ms < %(cutoff)s
), over AS (
    DELETE FROM runs
    WHERE qid = %(qid)s AND added <= (SELECT added FROM total) - %(keep)s
)
SELECT count(*),
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(id) END,
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(token) END
FROM gone
