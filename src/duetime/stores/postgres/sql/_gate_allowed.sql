-- _gate_allowed: the CTEs "gate" (the queue's gates, and its running tasks under a global
-- concurrency) and "allowed" (one row: n, how many tasks the claim may start; base and
-- running), shared by claim_gated.sql and claim_grouped.sql: the arithmetic of
-- duetime/stores/gating.py.
gate AS (
    SELECT q.paused, q.hold_ms,
           greatest(coalesce(q.tat, %(now)s), %(now)s) AS base,
           (SELECT count(*) FROM tasks
            WHERE qid = %(qid)s AND deadline_ms IS NOT NULL AND %(max_running)s > 0) AS running
    FROM queues AS q
    WHERE q.qid = %(qid)s
), allowed AS (
    SELECT CASE
               WHEN g.paused OR g.hold_ms > %(now)s THEN 0
               WHEN %(interval)s > 0
                    AND g.base - %(now)s > (%(burst)s - 1) * %(interval)s + 1e-6 THEN 0
               ELSE least(
                   %(limit)s,
                   CASE WHEN %(max_running)s > 0
                        THEN greatest(%(max_running)s - g.running, 0) ELSE %(limit)s END,
                   CASE WHEN %(interval)s > 0
                        THEN floor(((%(burst)s - 1) * %(interval)s - (g.base - %(now)s))
                                   / %(interval)s + 1e-6)::bigint + 1
                        ELSE %(limit)s END)
           END AS n,
           g.base, g.running
    FROM gate AS g
)
