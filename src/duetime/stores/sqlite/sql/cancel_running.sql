-- cancel_running: cancel a task a run holds a lease on. The lease stays and the handler
-- finishes, but the record goes, so its outcome neither reschedules nor retries it; the
-- lease's end (settle or reaping) then deletes the row. A task also due or dead leaves
-- those states. Running it twice changes nothing the second time.
-- Parameters: ? qid, ? id.
-- Row count: 1 when there was a task to cancel, else 0.
UPDATE duetime_tasks
SET due_ms = NULL, dead_ms = NULL, record = NULL, stalls = 0, error = NULL
WHERE qid = ? AND id = ? AND token IS NOT NULL
  AND (due_ms IS NOT NULL OR dead_ms IS NOT NULL OR record IS NOT NULL)
