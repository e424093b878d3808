-- 0002_cron_names: the names of the cron schedules of each namespace.
--
-- duetime_crons: one row per (namespace, schedule name), naming the task type whose tasks
-- carry the schedule's ticks; a name belongs to one type at a time.
CREATE TABLE duetime_crons (
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    type      TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
) WITHOUT ROWID;
