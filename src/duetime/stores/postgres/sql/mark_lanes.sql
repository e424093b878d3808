-- mark_lanes: note that a queue holds (or held) a task of a priority other than 0, so that
-- its claims look at priorities (0008_priorities.sql), in the transaction of lanes_on.sql,
-- after lock_tasks.sql.
-- Parameters: %(qid)s.
-- Returns a row when it set lanes (then lanes_on.sql follows), none when it was set.
UPDATE queues SET lanes = true WHERE qid = %(qid)s AND NOT lanes RETURNING qid
