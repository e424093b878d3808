-- group_drop: forget a group with nothing due whose rate time is not ahead of now (a row
-- made again by the next write of one of its tasks would hold the same). Run by
-- executemany after group_moved.sql.
-- Parameters: :qid, :group, :now ms.
DELETE FROM duetime_groups
WHERE qid = :qid AND name = :group AND ready_ms IS NULL AND (tat IS NULL OR tat <= :now)
