-- trim_runs_age: drop the runs of a type that finished before a cutoff (an index range).
-- Parameters: ? qid, ? cutoff ms.
DELETE FROM duetime_runs WHERE qid = ? AND finished_ms < ?
