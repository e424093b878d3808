-- 0007_runs: the run history of each task type.
--
-- runs: the finished runs of a queue (attempts done, failed, dead or aborted), written by
-- the settles in their own statements (and after the claims that reap expired leases),
-- and trimmed there. A row holds either the plain completions of one settle (batch: a line
-- each, see stores/history.py; base_ms the settle's time), so that a busy worker writes one
-- row per settle, or one run (batch NULL; base_ms when it finished): its task id, the
-- occurrence it ran (ms), which attempt it was, when its handler started (NULL when none
-- did, or when that is unknown: a run whose lease expired), how it ended, its error and
-- traceback (bounded by the worker). worker: the worker that ran them (NULL when unknown).
-- added: how many runs the queue's history had taken in all, this row's included, so that
-- the newest rows holding `keep` runs are a range (two settles of a type at once may count
-- alike: n orders them); keep: the most runs the type kept as the row was written (a
-- reader stops there). Rows come and go with the settles, so its autovacuum is tuned as
-- the tasks table's.
CREATE TABLE runs (
    qid           bigint NOT NULL,
    added         bigint NOT NULL,
    n             bigint GENERATED ALWAYS AS IDENTITY,
    base_ms       bigint NOT NULL,
    keep          bigint NOT NULL,
    worker        text,
    batch         text,
    id            text COLLATE "C",
    occurrence_ms bigint,
    attempt       bigint,
    started_ms    bigint,
    outcome       text,
    error         text,
    trace         text,
    PRIMARY KEY (qid, added, n)
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- A queue's rows by time, for trimming by age.
CREATE INDEX runs_age ON runs (qid, base_ms);
