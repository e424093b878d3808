-- 0003_fences: each queue's fence.
--
-- fence: the highest token, from a claim of another type (a poller's call), that began
-- writing to this type (raise_fence.sql); a write carrying a lower one is refused
-- (read_fence.sql, which locks the row for the write's transaction, so a fence raised
-- meanwhile waits for the write, or the write sees it). 0 until a poller raises it; never
-- lowered.
ALTER TABLE queues ADD COLUMN fence bigint NOT NULL DEFAULT 0;
