-- settle_drop: the fast path of kept "done" outcomes, for tasks neither due again nor
-- dead: the run ends and the task (record, stalls, error) goes with it. An outcome whose
-- claim lost the lease, or whose task was rescheduled meanwhile, deletes nothing (the
-- caller hands it to settle.sql). See _settle_gone.sql for how the tasks are found, and
-- the wake-up of a type at its global concurrency.
-- Parameters: %(qid)s, %(ids)s, %(tokens)s (arrays of one length), %(now)s, %(channel)s,
-- %(type)s.
-- Returns one row: how many tasks were deleted; then, unless that is all of the ids (the
-- common case, which then costs the caller nothing per task), the ids and the tokens of
-- those deleted (arrays of one length, NULL when none was), else NULL, NULL.
WITH
-- include _settle_gone.sql
SELECT count(*),
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(id) END,
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(token) END
FROM gone
