-- 0004_finished: when runs of tasks scheduled with unique_for finished.
--
-- finished: one row per (queue, id) whose last run, of a task scheduled with unique_for,
-- finished (done or dead) at finished_ms; it counts until until_ms (the finish plus the
-- task's window) and is deleted after: the settle that writes rows deletes the queue's
-- rows past their until_ms (mark_finished.sql, trim_finished.sql), and schedule_if reads
-- them (finished_at.sql).
CREATE TABLE finished (
    qid         bigint NOT NULL,
    id          text COLLATE "C" NOT NULL,
    finished_ms bigint NOT NULL,
    until_ms    bigint NOT NULL,
    PRIMARY KEY (qid, id)
);

CREATE INDEX finished_until ON finished (qid, until_ms);
