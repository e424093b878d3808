-- trim_runs_age: drop a queue's rows of runs that all finished before a cutoff (an index
-- range: a row's base is at or after each of its runs' finish).
-- Parameters: ? qid, ? cutoff ms.
DELETE FROM duetime_runs WHERE qid = ? AND base_ms < ?
