-- 0007_gates: each queue's gates (docs/flow.md): what a claim reads before it takes tasks.
--
-- paused:  1 while the type is paused (set_paused.sql): no claim starts its tasks.
-- hold_ms: no claim starts a task of the type before this (a handler's RateLimited, written
--          by the settle that hands its task back; hold.sql), or NULL.
-- tat:     the rate's theoretical arrival time (a GCRA, ms with a fraction: the steady
--          rate's next start), or NULL before the type's first start under a rate.
-- waiting: 1 once a claim found the type at its global concurrency: the settle that ends
--          one of its runs wakes the workers and clears it (gate_woken.sql).
-- A type with none of them set (paused 0, hold_ms NULL or past, no rate or global
-- concurrency in its code) is claimed as before, at the cost of reading this row.
ALTER TABLE duetime_queues ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE duetime_queues ADD COLUMN hold_ms INTEGER;
ALTER TABLE duetime_queues ADD COLUMN tat REAL;
ALTER TABLE duetime_queues ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
