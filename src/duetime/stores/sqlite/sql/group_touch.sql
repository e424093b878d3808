-- group_touch: a write made a task of a group due at a time: the group's turn comes no
-- later than that (its row is made, or its ready time lowered to it). Run by executemany,
-- one row per group a write touched, with the earliest due time it wrote there.
-- Parameters: ? qid, ? group, ? due ms.
INSERT INTO duetime_groups (qid, name, ready_ms) VALUES (?, ?, ?)
ON CONFLICT (qid, name) DO UPDATE
SET ready_ms = CASE WHEN ready_ms IS NULL OR excluded.ready_ms < ready_ms
                    THEN excluded.ready_ms ELSE ready_ms END
