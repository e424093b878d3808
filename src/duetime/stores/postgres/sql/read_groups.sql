-- read_groups: whether a queue keeps its tasks by group (0009_groups.sql).
-- Parameters: %(qid)s.
-- Returns one row: grouped.
SELECT grouped FROM queues WHERE qid = %(qid)s
