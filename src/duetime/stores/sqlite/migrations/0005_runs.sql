-- 0005_runs: the run history of each task type.
--
-- duetime_runs: one row per finished run (an attempt done, failed, dead or aborted) of a
-- queue: its task id, the occurrence it ran (ms), which attempt it was, when its handler
-- started (NULL when none did, or when that is unknown: a run whose lease expired) and
-- when the run ended, how it ended, its error and traceback (bounded by the worker), and
-- the worker that ran it (NULL when unknown). Written by the settles (and the claims that
-- reap expired leases) in their own transactions, and trimmed there to the newest runs
-- and those young enough.
CREATE TABLE duetime_runs (
    rid           INTEGER PRIMARY KEY,
    qid           INTEGER NOT NULL REFERENCES duetime_queues (qid),
    id            TEXT NOT NULL,
    occurrence_ms INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    started_ms    INTEGER,
    finished_ms   INTEGER NOT NULL,
    outcome       TEXT NOT NULL,
    error         TEXT,
    trace         TEXT,
    worker        TEXT
);

-- A type's runs by when they finished (ties by rid, the order they were written): the
-- newest first for a listing, the oldest first for trimming by age.
CREATE INDEX duetime_runs_by_type ON duetime_runs (qid, finished_ms);
