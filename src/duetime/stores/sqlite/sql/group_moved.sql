-- group_moved: a claim visited a group (or found its row stale): its turn comes next at
-- max(:floor, its earliest due time), NULL when nothing of it is due; its rate time
-- becomes :tat unless that is NULL. Run by executemany.
-- Parameters: :floor ms (the claim's now for a visit; a very low number for a stale row,
-- which then gets its earliest due time), :tat, :qid, :group.
UPDATE duetime_groups
SET ready_ms = max(:floor,
        (SELECT t.due_ms FROM duetime_tasks AS t
         WHERE t.qid = :qid AND t.grp = :group AND t.grp IS NOT NULL
           AND t.due_ms IS NOT NULL
         ORDER BY t.due_ms LIMIT 1)),
    tat = coalesce(:tat, tat)
WHERE qid = :qid AND name = :group
