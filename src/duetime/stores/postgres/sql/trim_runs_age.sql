-- trim_runs_age: drop the runs of a type that finished before a cutoff (an index range):
-- a claim's, so that runs age out while nothing new is recorded.
-- Parameters: %(qid)s, %(cutoff)s (ms).
DELETE FROM runs WHERE qid = %(qid)s AND finished_ms < %(cutoff)s
