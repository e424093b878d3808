-- read_lanes: whether a queue's claims look at priorities (0008_priorities.sql).
-- Parameters: %(qid)s.
-- Returns one row: lanes.
SELECT lanes FROM queues WHERE qid = %(qid)s
