-- read_lanes: whether a queue's claims look at priorities (0009_priorities.sql).
-- Parameters: ? qid.
-- Returns one row: lanes (0 or 1).
SELECT lanes FROM duetime_queues WHERE qid = ?
