-- 0001_initial: the tables of duetime's SQLite store.
--
-- Applied by schema.py inside one BEGIN IMMEDIATE transaction together with the row it
-- adds to duetime_schema, one statement at a time (split at the semicolons that end them).
--
-- duetime_schema: one row per applied migration. The highest version is the file's
-- schema version; a file with a version this code does not know is refused.
CREATE TABLE duetime_schema (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_ms INTEGER NOT NULL
);

-- duetime_queues: one row per (namespace, task type), never deleted. Tasks refer to it by
-- qid, so that their rows and indexes carry a small integer rather than two names. It
-- also holds the type's fencing token sequence (last_token: the last token given out;
-- tokens are unique and increasing per type and never reused) and its wake-up serial
-- (bumped, with the due time, by every write that makes a task the earliest of its type;
-- listeners in other processes poll PRAGMA data_version and read these columns only when
-- it changed).
CREATE TABLE duetime_queues (
    qid         INTEGER PRIMARY KEY,
    namespace   TEXT NOT NULL,
    type        TEXT NOT NULL,
    last_token  INTEGER NOT NULL DEFAULT 0,
    wake_serial INTEGER NOT NULL DEFAULT 0,
    wake_due_ms INTEGER,
    UNIQUE (namespace, type)
);

-- duetime_tasks: one row per (queue, id), that is per (namespace, type, id). Its state
-- lives in three independent parts, as the Redis store's three sorted sets:
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
CREATE TABLE duetime_tasks (
    rid            INTEGER PRIMARY KEY,
    qid            INTEGER NOT NULL REFERENCES duetime_queues (qid),
    id             TEXT NOT NULL,
    due_ms         INTEGER,
    token          INTEGER,
    claimed_due_ms INTEGER,
    deadline_ms    INTEGER,
    dead_ms        INTEGER,
    record         TEXT,
    stalls         INTEGER NOT NULL DEFAULT 0,
    error          TEXT,
    CHECK ((token IS NULL) = (deadline_ms IS NULL)),
    CHECK ((token IS NULL) = (claimed_due_ms IS NULL))
);

-- One row per id, and the lookup by id.
CREATE UNIQUE INDEX duetime_tasks_by_id ON duetime_tasks (qid, id);

-- Partial indexes, one per state, ordered as claims and listings read them (ties broken
-- by id, as Redis orders equal scores): the earliest due tasks of a type, the expired
-- leases and the oldest dead letters are each an index range scan.
CREATE INDEX duetime_tasks_due ON duetime_tasks (qid, due_ms, id)
    WHERE due_ms IS NOT NULL;
CREATE INDEX duetime_tasks_running ON duetime_tasks (qid, deadline_ms, id)
    WHERE deadline_ms IS NOT NULL;
CREATE INDEX duetime_tasks_dead ON duetime_tasks (qid, dead_ms, id)
    WHERE dead_ms IS NOT NULL;
