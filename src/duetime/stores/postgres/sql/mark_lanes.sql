-- mark_lanes: note that a queue holds (or held) a task of a priority other than 0, so that
-- its claims look at priorities (0008_priorities.sql); run by the schedule of such a task.
-- Parameters: %(qid)s.
UPDATE queues SET lanes = true WHERE qid = %(qid)s AND NOT lanes
