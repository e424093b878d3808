-- groups_on: the queue's tasks written before it had groups (grp NULL) become tasks of the
-- group '' (none); run once, by the write that sets grouped (mark_grouped.sql), in its
-- transaction, before group_none.sql.
-- Parameters: ? qid.
UPDATE duetime_tasks SET grp = '' WHERE qid = ? AND grp IS NULL
