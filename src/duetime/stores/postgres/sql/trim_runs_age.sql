-- trim_runs_age: drop a queue's rows of runs that all finished before a cutoff (an index
-- range): a claim's, so that runs age out while nothing new is recorded.
-- Parameters: %(qid)s, %(cutoff)s (ms).
DELETE FROM runs WHERE qid = %(qid)s AND base_ms < %(cutoff)s
