-- 0003_telemetry: what workers tell about themselves, for people watching.
--
-- duetime_workers: one row per live worker of a namespace, its heartbeat record (JSON) and
-- when that lapses (ms); lapsed rows are deleted by the next heartbeat of any worker.
CREATE TABLE duetime_workers (
    namespace TEXT NOT NULL,
    id        TEXT NOT NULL,
    record    TEXT NOT NULL,
    until_ms  INTEGER NOT NULL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;

-- duetime_minutes: counts per namespace, minute (its start, ms), task type and what was
-- counted; rows older than the hour kept are deleted as counts are added.
CREATE TABLE duetime_minutes (
    namespace TEXT NOT NULL,
    minute_ms INTEGER NOT NULL,
    type      TEXT NOT NULL,
    what      TEXT NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (namespace, minute_ms, type, what)
) WITHOUT ROWID;
