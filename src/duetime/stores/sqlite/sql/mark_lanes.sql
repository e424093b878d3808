-- mark_lanes: note that a queue holds (or held) a task of a priority other than 0, so that
-- its claims look at priorities (0009_priorities.sql); written by the schedule of such a
-- task, once (row count 1: then lanes_on.sql follows).
-- Parameters: ? qid.
UPDATE duetime_queues SET lanes = 1 WHERE qid = ? AND lanes = 0
