-- group_touch_rows: group_touch.sql for the rows a settle, a reap or another write made
-- due again (each row's group and due time read from it; rows not due, or of a queue
-- without groups, are passed over). CROSS JOIN keeps json_each the outer loop: one seek
-- by rid each.
-- Parameters: :rids (a JSON array of rids).
INSERT INTO duetime_groups (qid, name, ready_ms)
SELECT t.qid, t.grp, min(t.due_ms)
FROM json_each(:rids) AS j CROSS JOIN duetime_tasks AS t
WHERE t.rid = j.value AND t.due_ms IS NOT NULL AND t.grp IS NOT NULL
GROUP BY t.qid, t.grp
ON CONFLICT (qid, name) DO UPDATE
SET ready_ms = CASE WHEN ready_ms IS NULL OR excluded.ready_ms < ready_ms
                    THEN excluded.ready_ms ELSE ready_ms END
