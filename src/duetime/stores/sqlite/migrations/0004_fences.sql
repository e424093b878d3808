-- 0004_fences: each queue's fence.
--
-- fence: the highest token, from a claim of another type (a poller's call), that began
-- writing to this type (raise_fence.sql); a write carrying a lower one is refused
-- (read_fence.sql, in the write's transaction). 0 until a poller raises it; never lowered.
ALTER TABLE duetime_queues ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
