-- count_running: how many tasks of a queue hold a lease (an index range scan of
-- duetime_tasks_running), for a claim under a global concurrency, after it reaped.
-- Parameters: ? qid.
-- Returns one row: the count.
SELECT count(*) FROM duetime_tasks WHERE qid = ? AND deadline_ms IS NOT NULL
