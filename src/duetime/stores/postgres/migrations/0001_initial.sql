-- 0001_initial: the tables of duetime's PostgreSQL store, in the store's own schema (the
-- connections' search_path names it; see connection.py).
--
-- Applied by schema.py in one transaction, under an advisory lock held by that transaction,
-- together with the row it adds to schema_version.
--
-- schema_version: one row per applied migration. The highest version is the schema's
-- version; a schema with a version this code does not know is refused.
CREATE TABLE schema_version (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_ms bigint NOT NULL
);

-- queues: one row per (namespace, task type), never deleted. Tasks refer to it by qid, so
-- that their rows and indexes carry a small integer rather than two names.
CREATE TABLE queues (
    qid       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace text NOT NULL,
    type      text NOT NULL,
    UNIQUE (namespace, type)
);

-- tokens: the fencing tokens claims hand out. One sequence for every type: unique and
-- increasing per type (a later claim gets a larger one), and never reused; a sequence
-- takes no row lock, so claimers of one type do not queue on a counter row.
CREATE SEQUENCE tokens AS bigint;

-- tasks: one row per (queue, id), that is per (namespace, type, id). Its state lives in
-- three independent parts, as the Redis store's three sorted sets:
--   due_ms                              set while the task waits to run (state due);
--   token, claimed_due_ms, deadline_ms  set together while a run holds the lease
--                                       (state running);
--   dead_ms                             set while it sits in the dead letters.
-- A task can be due and hold a lease at once (it was rescheduled while it ran): it is
-- then reported as due, and the old run's outcome only ends its lease. A row with none
-- of the three parts is deleted by the write that empties it.
-- record is the JSON record (NULL when cancelled while running, or for a dead letter
-- moved aside without one); stalls counts expired leases of the current occurrence;
-- error is the last error, or why the task is dead.
-- Ids sort by their bytes (COLLATE "C"), as Redis sorts equal scores.
--
-- The table churns (every task is inserted, updated and deleted within seconds), so its
-- autovacuum runs after 2% of its rows changed rather than PostgreSQL's default of 20%,
-- and without the cost delay that would let dead rows pile up faster than it removes
-- them (docs/postgres.md).
CREATE TABLE tasks (
    qid            bigint NOT NULL,
    id             text COLLATE "C" NOT NULL,
    due_ms         bigint,
    token          bigint,
    claimed_due_ms bigint,
    deadline_ms    bigint,
    dead_ms        bigint,
    record         text,
    stalls         integer NOT NULL DEFAULT 0,
    error          text,
    PRIMARY KEY (qid, id),
    CHECK ((token IS NULL) = (deadline_ms IS NULL)),
    CHECK ((token IS NULL) = (claimed_due_ms IS NULL))
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- Partial indexes, one per state, ordered as claims and listings read them (ties broken
-- by id): the claimable tasks of a type (due_ms set), the leases by deadline and the
-- oldest dead letters are each an index range scan, and an index holds only the rows in
-- its state, so a claim never walks past finished work.
CREATE INDEX tasks_due ON tasks (qid, due_ms, id) WHERE due_ms IS NOT NULL;
CREATE INDEX tasks_running ON tasks (qid, deadline_ms, id) WHERE deadline_ms IS NOT NULL;
CREATE INDEX tasks_dead ON tasks (qid, dead_ms, id) WHERE dead_ms IS NOT NULL;

-- crons: one row per (namespace, cron schedule name), naming the task type whose tasks
-- carry the schedule's ticks; a name belongs to one type at a time.
CREATE TABLE crons (
    namespace text NOT NULL,
    name      text NOT NULL,
    type      text NOT NULL,
    PRIMARY KEY (namespace, name)
);
