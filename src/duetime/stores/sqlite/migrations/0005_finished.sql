-- 0005_finished: when runs of tasks scheduled with unique_for finished.
--
-- duetime_finished: one row per (queue, id) whose last run, of a task scheduled with
-- unique_for, finished (done or dead) at finished_ms; it counts until until_ms (the finish
-- plus the task's window) and is deleted after: the settle that writes rows deletes the
-- queue's rows past their until_ms (mark_finished.sql, trim_finished.sql), and
-- schedule_if reads them (finished_at.sql).
CREATE TABLE duetime_finished (
    qid         INTEGER NOT NULL,
    id          TEXT NOT NULL,
    finished_ms INTEGER NOT NULL,
    until_ms    INTEGER NOT NULL,
    PRIMARY KEY (qid, id)
) WITHOUT ROWID;

CREATE INDEX duetime_finished_until ON duetime_finished (qid, until_ms);
