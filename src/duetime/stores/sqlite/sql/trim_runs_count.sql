-- trim_runs_count: drop the runs of a type beyond its newest :keep (a walk of the type's
-- index from its newest end: about :keep steps, as the trim follows every write).
-- Parameters: :qid, :keep.
DELETE FROM duetime_runs
WHERE rid IN (
    SELECT rid FROM duetime_runs
    WHERE qid = :qid
    ORDER BY finished_ms DESC, rid DESC
    LIMIT -1 OFFSET :keep
)
