-- 0004_runs: the run history of each task type.
--
-- runs: one row per finished run (an attempt done, failed, dead or aborted) of a queue:
-- its task id, the occurrence it ran (ms), which attempt it was, when its handler started
-- (NULL when none did, or when that is unknown: a run whose lease expired) and when the
-- run ended, how it ended, its error and traceback (bounded by the worker), and the worker
-- that ran it (NULL when unknown). Written by the settles in their own statements (and
-- after the claims that reap expired leases), which trim it in the same statement to the
-- newest runs and those young enough. n orders runs that finished in the same millisecond.
-- Rows come and go as fast as tasks, so its autovacuum is tuned as the tasks table's.
CREATE TABLE runs (
    qid           bigint NOT NULL,
    finished_ms   bigint NOT NULL,
    n             bigint GENERATED ALWAYS AS IDENTITY,
    id            text COLLATE "C" NOT NULL,
    occurrence_ms bigint NOT NULL,
    attempt       bigint NOT NULL,
    started_ms    bigint,
    outcome       text NOT NULL,
    error         text,
    trace         text,
    worker        text,
    PRIMARY KEY (qid, finished_ms, n)
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);
