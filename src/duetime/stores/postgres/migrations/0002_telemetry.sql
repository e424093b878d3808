-- 0002_telemetry: what workers tell about themselves, for people watching.
--
-- workers: one row per live worker of a namespace, its heartbeat record (JSON text) and
-- when that lapses (ms); lapsed rows are deleted by the next heartbeat of any worker.
CREATE TABLE workers (
    namespace text NOT NULL,
    id        text NOT NULL,
    record    text NOT NULL,
    until_ms  bigint NOT NULL,
    PRIMARY KEY (namespace, id)
);

-- minutes: counts per namespace, minute (its start, ms), task type and what was counted;
-- rows older than the hour kept are deleted as counts are added.
CREATE TABLE minutes (
    namespace text NOT NULL,
    minute_ms bigint NOT NULL,
    type      text NOT NULL,
    what      text NOT NULL,
    n         bigint NOT NULL,
    PRIMARY KEY (namespace, minute_ms, type, what)
);
