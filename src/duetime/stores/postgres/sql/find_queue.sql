-- find_queue: the queue (qid) of a (namespace, type). Queue rows are never deleted, so the
-- store keeps the answers it finds.
-- Parameters: %(namespace)s, %(type)s.
-- Returns no row (the type never had a task) or one: qid.
SELECT qid FROM queues WHERE namespace = %(namespace)s AND type = %(type)s
