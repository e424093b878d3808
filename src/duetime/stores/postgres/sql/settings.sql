-- settings: the server settings that decide what a crash may lose.
-- Parameters: none.
-- Returns one row: fsync, synchronous_commit, full_page_writes.
SELECT current_setting('fsync'), current_setting('synchronous_commit'),
       current_setting('full_page_writes')
