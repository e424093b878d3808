-- lock_tasks: hold every write of tasks off until the transaction ends, and wait for those
-- in progress: the transaction that gives a queue lanes (0008_priorities.sql), once a
-- queue. SHARE ROW EXCLUSIVE conflicts with itself, so two such transactions take turns.
-- Parameters: none.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE
