-- 0008_runs: the run history of each task type.
--
-- duetime_runs: the finished runs of a queue (attempts done, failed, dead or aborted),
-- written by the settles (and the claims that reap expired leases) in their own
-- transactions, and trimmed there. A row holds either the plain completions of one settle
-- (batch: a line each, see stores/history.py; base_ms the settle's time), so that a busy
-- worker writes one row per settle, or one run (batch NULL; base_ms when it finished): its
-- task id, the occurrence it ran (ms), which attempt it was, when its handler started (NULL
-- when none did, or when that is unknown: a run whose lease expired), how it ended, its
-- error and traceback (bounded by the worker). worker: the worker that ran them (NULL when
-- unknown). added: how many runs the queue's history had taken in all, this row's
-- included, so that the newest rows holding `keep` runs are a range; keep: the most runs
-- the type kept as the row was written (a reader stops there).
CREATE TABLE duetime_runs (
    rid           INTEGER PRIMARY KEY,
    qid           INTEGER NOT NULL REFERENCES duetime_queues (qid),
    added         INTEGER NOT NULL,
    base_ms       INTEGER NOT NULL,
    keep          INTEGER NOT NULL,
    worker        TEXT,
    batch         TEXT,
    id            TEXT,
    occurrence_ms INTEGER,
    attempt       INTEGER,
    started_ms    INTEGER,
    outcome       TEXT,
    error         TEXT,
    trace         TEXT
);

-- A queue's rows in the order they were added (listings, newest first; trimming by count),
-- and by time (trimming by age).
CREATE INDEX duetime_runs_added ON duetime_runs (qid, added);
CREATE INDEX duetime_runs_age ON duetime_runs (qid, base_ms);
