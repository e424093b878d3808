-- add_queue: create the queue of a (namespace, type) on its first write.
-- Parameters: ? qid.
-- Returns one row: qid.
INSERT INTO duetime_queues (namespace, type) VALUES (?, ?) RETURNING qid
