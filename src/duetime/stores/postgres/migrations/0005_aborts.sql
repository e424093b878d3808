-- 0005_aborts: runs marked to abort (Store.abort).
--
-- tasks.abort_token: the token of the run marked to abort (abort_mark.sql). It means
-- something only while that token holds the lease (token = abort_token); a value left from
-- an earlier run of the row means nothing. NULL for a task never aborted. Adding a column
-- with no default rewrites no row.
ALTER TABLE tasks ADD COLUMN abort_token bigint;
