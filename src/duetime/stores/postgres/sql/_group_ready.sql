-- _group_ready: a CTE of the statements that make tasks due (after their own CTE "written",
-- rows with grp and due_ms): each group of them gets its turn no later than its earliest
-- task made due (0009_groups.sql), one row per group, in the order of their names (so
-- that two writes lock them in one order). The row is written even when its turn is
-- earlier already: a grouped claim that did not see this write's tasks then leaves the
-- turn as it is (claim_grouped.sql). A queue without groups writes no row (grp NULL).
readied AS (
    INSERT INTO task_groups AS g (qid, name, ready_ms)
    SELECT %(qid)s, w.grp, min(w.due_ms) FROM written AS w
    WHERE w.grp IS NOT NULL AND w.due_ms IS NOT NULL
    GROUP BY w.grp
    ORDER BY w.grp
    ON CONFLICT (qid, name) DO UPDATE SET ready_ms = least(g.ready_ms, excluded.ready_ms)
)
