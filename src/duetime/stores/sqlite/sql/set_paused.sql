-- set_paused: pause (1) or resume (0) a queue; changes nothing when it is so already.
-- Parameters: ? paused, ? qid, ? paused.
-- Row count: 1 when it changed.
UPDATE duetime_queues SET paused = ? WHERE qid = ? AND paused <> ?
