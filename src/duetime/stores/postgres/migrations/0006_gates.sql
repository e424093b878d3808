-- 0006_gates: each queue's gates (docs/flow.md): what a claim reads before it takes tasks.
--
-- paused:  true while the type is paused (set_paused.sql): no claim starts its tasks.
-- hold_ms: no claim starts a task of the type before this (a handler's RateLimited,
--          written with the settle that hands its task back; hold.sql), or NULL.
-- tat:     the rate's theoretical arrival time (a GCRA, ms with a fraction: the steady
--          rate's next start), or NULL before the type's first start under a rate.
-- waiting: true once a claim found the type at its global concurrency: the settle that
--          ends one of its runs clears it and wakes the workers (settle_drop.sql,
--          settle.sql).
-- Claims under a rate or a global concurrency lock this row (lock_gate.sql), so that they
-- count and take one after the other; other claims only read it, and do not wait.
ALTER TABLE queues
    ADD COLUMN paused boolean NOT NULL DEFAULT false,
    ADD COLUMN hold_ms bigint,
    ADD COLUMN tat double precision,
    ADD COLUMN waiting boolean NOT NULL DEFAULT false;
