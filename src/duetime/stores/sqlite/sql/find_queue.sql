-- find_queue: the queue (qid) of a (namespace, type). Queue rows are never deleted, so the
-- store keeps the answers it finds.
-- Parameters: ? qid.
-- Returns no row (the type never had a task) or one: qid.
SELECT qid FROM duetime_queues WHERE namespace = ? AND type = ?
