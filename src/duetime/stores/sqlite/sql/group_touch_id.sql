-- group_touch_id: group_touch.sql for one task by id that a write made due (revive,
-- hasten, merge); nothing when it is not due or its queue has no groups.
-- Parameters: ? qid, ? id.
INSERT INTO duetime_groups (qid, name, ready_ms)
SELECT qid, grp, due_ms FROM duetime_tasks
WHERE qid = ? AND id = ? AND due_ms IS NOT NULL AND grp IS NOT NULL
ON CONFLICT (qid, name) DO UPDATE
SET ready_ms = CASE WHEN ready_ms IS NULL OR excluded.ready_ms < ready_ms
                    THEN excluded.ready_ms ELSE ready_ms END
