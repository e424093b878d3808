-- group_visit: the groups whose turn has come, in turn order (a range scan of
-- duetime_groups_ready, never all the groups), each with its rate time and the due time of
-- its earliest due task (a seek of duetime_tasks_groups; NULL when none: the row is stale).
-- Parameters: :qid, :horizon ms (now, plus the claim's look-ahead), :most (rows).
-- Returns rows: name, tat (NULL: none), earliest due ms (NULL: none).
SELECT g.name, g.tat,
    (SELECT t.due_ms FROM duetime_tasks AS t
     WHERE t.qid = g.qid AND t.grp = g.name AND t.grp IS NOT NULL AND t.due_ms IS NOT NULL
     ORDER BY t.due_ms LIMIT 1)
FROM duetime_groups AS g
WHERE g.qid = :qid AND g.ready_ms IS NOT NULL AND g.ready_ms <= :horizon
ORDER BY g.ready_ms, g.name
LIMIT :most
