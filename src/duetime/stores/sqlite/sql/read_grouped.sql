-- read_grouped: whether a queue's tasks carry groups (0010_groups.sql).
-- Parameters: ? qid.
-- Returns one row: grouped (0 or 1).
SELECT grouped FROM duetime_queues WHERE qid = ?
