-- settle_end: end the run of a kept outcome: the lease goes; with :clear the stall count
-- and error go too (done and next, unless rescheduled while it ran); with :drop the
-- record goes (done, unless rescheduled while it ran). Run by executemany.
-- Parameters: :clear (0 or 1), :drop (0 or 1), :rid.
UPDATE duetime_tasks
SET token = NULL,
    claimed_due_ms = NULL,
    deadline_ms = NULL,
    stalls = CASE WHEN :clear THEN 0 ELSE stalls END,
    error = CASE WHEN :clear THEN NULL ELSE error END,
    record = CASE WHEN :drop THEN NULL ELSE record END
WHERE rid = :rid
