-- lanes_on: the queue's tasks written before it had lanes (priority NULL) become tasks of
-- priority 0 in tasks_lanes (0008_priorities.sql); after mark_lanes.sql, in its
-- transaction.
-- Parameters: %(qid)s.
UPDATE tasks SET priority = 0 WHERE qid = %(qid)s AND priority IS NULL
