-- 0006_aborts: runs marked to abort (Store.abort).
--
-- duetime_tasks.abort_token: the token of the run marked to abort (abort_mark.sql). It
-- means something only while that token holds the lease (token = abort_token); a value
-- left from an earlier run of the row means nothing. NULL for a task never aborted.
ALTER TABLE duetime_tasks ADD COLUMN abort_token INTEGER;

-- duetime_queues.abort_serial: bumped with every run of the type marked to abort; listeners
-- in other processes read it with the wake serial (read_wakes.sql), and the workers of the
-- type then ask which of their runs are marked (aborting.sql).
ALTER TABLE duetime_queues ADD COLUMN abort_serial INTEGER NOT NULL DEFAULT 0;
