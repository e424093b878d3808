-- mark_finished: remember that runs of tasks scheduled with unique_for finished (done or
-- dead) now, each until its window has passed; in the settle's transaction.
-- Parameters: %(qid)s, %(now)s, %(ids)s, %(untils)s (arrays of one length, ids distinct).
INSERT INTO finished (qid, id, finished_ms, until_ms)
SELECT %(qid)s, f.id, %(now)s, f.until_ms
FROM unnest(%(ids)s::text[], %(untils)s::bigint[]) AS f (id, until_ms)
ON CONFLICT (qid, id) DO UPDATE
SET finished_ms = excluded.finished_ms,
    until_ms = excluded.until_ms
