-- claim_grouped: claim_gated.sql for a type with group limits (a group concurrency or a
-- group rate), after lock_gate.sql in the same transaction (so the grouped claims of a type
-- take turns, and each sees the leases the ones before it took). The type's gates allow n
-- tasks, as in claim_gated.sql. Then it visits the groups whose turn has come (ready_ms by
-- the horizon: 0009_groups.sql), earliest turn first, at most %(visits)s of them: an index
-- range scan of groups_ready, never a scan of every group. Each group visited may give
-- ceil(n / groups visited) tasks (its turn's share), and no more than its own limits allow
-- ('' is the tasks without a group, held by no group limit): its concurrency less its
-- tasks holding a lease (counted up to the limit, in tasks_group_leases) and its rate (a
-- GCRA on the group's tat, the arithmetic of duetime/stores/gating.py). Each group's
-- earliest due tasks are read from tasks_groups up to that, locked (FOR UPDATE SKIP
-- LOCKED), and the first n of them all are taken (found by their primary key, as in
-- claim.sql): the first of each group in turn, then the second of each, ... Priorities are
-- not looked at. A group served, found at its limits or found empty gets its turn at the
-- later of its earliest due task left and now (none: NULL, out of groups_ready), and its
-- rate's time moves on by its tasks started; a group whose tasks were all left for the
-- others keeps its turn. A write that made tasks
-- of a group due since this statement's snapshot wrote the group's row (_group_ready.sql):
-- the turn is then only brought forward, never dropped (the row's xmin tells).
-- The type's waiting is set when it is at its global concurrency, or when a group visited
-- has due work left and is at its concurrency: the settle that ends a run wakes the
-- workers.
-- Parameters: %(qid)s, %(horizon)s, %(limit)s, %(deadline)s, %(now)s, %(interval)s,
-- %(burst)s, %(max_running)s (the type's gates, as claim_gated.sql), %(group_interval)s (each
-- group's rate's ms between starts, 0: none), %(group_burst)s (>= 1), %(group_running)s
-- (0: none), %(visits)s (most groups visited).
-- Returns rows: as claim.sql, then one row whose id is NULL: the groups visited, whether one
-- was found empty, whether one with due work left is at its concurrency, and when the
-- first with due work left that its rate holds opens (ms, or NULL).
WITH
-- include _gate_allowed.sql
, visited AS (
    SELECT g.name, g.ready_ms, g.tat, g.xmin AS seen
    FROM task_groups AS g
    WHERE g.qid = %(qid)s AND g.ready_ms <= %(horizon)s AND (SELECT n FROM allowed) > 0
    ORDER BY g.ready_ms, g.name
    LIMIT %(visits)s
), turns AS (
    SELECT v.name, v.tat, v.seen,
           row_number() OVER (ORDER BY v.ready_ms, v.name) AS turn,
           ceil((SELECT n FROM allowed)::numeric / count(*) OVER ())::bigint AS share,
           greatest(coalesce(v.tat, %(now)s), %(now)s) AS base,
           CASE WHEN %(group_running)s > 0 AND v.name <> '' THEN
               (SELECT count(*) FROM (
                    SELECT 1 FROM tasks AS r
                    WHERE r.qid = %(qid)s AND r.grp = v.name AND r.deadline_ms IS NOT NULL
                    LIMIT %(group_running)s) AS l)
           ELSE 0 END AS running
    FROM visited AS v
), limits AS (
    SELECT t.*,
           CASE WHEN t.name = '' THEN t.share
                ELSE least(
                    t.share,
                    CASE WHEN %(group_running)s > 0
                         THEN greatest(%(group_running)s - t.running, 0) ELSE t.share END,
                    CASE WHEN %(group_interval)s <= 0 THEN t.share
                         WHEN t.base - %(now)s
                              > (%(group_burst)s - 1) * %(group_interval)s + 1e-6 THEN 0
                         ELSE floor(((%(group_burst)s - 1) * %(group_interval)s
                                     - (t.base - %(now)s)) / %(group_interval)s + 1e-6)::bigint
                              + 1 END)
           END AS cap
    FROM turns AS t
), candidates AS (
    SELECT l.turn, x.id,
           row_number() OVER (PARTITION BY l.turn ORDER BY x.due_ms, x.id) AS k
    FROM limits AS l
    CROSS JOIN LATERAL (
        SELECT id, due_ms FROM tasks
        WHERE qid = %(qid)s AND grp = l.name AND grp IS NOT NULL AND due_ms <= %(horizon)s
        ORDER BY due_ms, id
        LIMIT l.cap
        FOR UPDATE SKIP LOCKED
    ) AS x
    WHERE l.cap > 0
), picked AS (
    SELECT id, turn FROM candidates
    ORDER BY k, turn
    LIMIT (SELECT n FROM allowed)
), leased AS (
    UPDATE tasks AS t
    SET due_ms = NULL,
        token = CASE WHEN t.record IS NULL THEN t.token ELSE nextval('tokens') END,
        claimed_due_ms = CASE WHEN t.record IS NULL THEN t.claimed_due_ms ELSE t.due_ms END,
        deadline_ms = CASE WHEN t.record IS NULL THEN t.deadline_ms ELSE %(deadline)s END,
        dead_ms = CASE WHEN t.record IS NULL THEN %(now)s ELSE t.dead_ms END,
        error = CASE WHEN t.record IS NULL THEN 'no record for this id: moved aside'
                     ELSE t.error END
    WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT id FROM picked))
    RETURNING t.id, CASE WHEN t.record IS NULL THEN NULL ELSE t.token END AS token, t.stalls,
              t.claimed_due_ms, t.record, t.priority, t.grp
), taken AS (
    SELECT turn, count(*) AS n FROM picked GROUP BY turn
), found AS (
    SELECT turn, count(*) AS n FROM candidates GROUP BY turn
), started AS (
    SELECT grp, count(token) AS n FROM leased GROUP BY grp
), served AS (
    SELECT s.*,
           s.taken > 0 OR s.cap = 0 OR s.found = 0 AS reached,
           CASE WHEN %(group_interval)s > 0 AND s.name <> '' AND s.started > 0
                THEN s.base + s.started * %(group_interval)s ELSE s.tat END AS new_tat,
           -- the group's earliest due task left: the first after those taken (which this
           -- statement's snapshot still shows due)
           (SELECT r.due_ms FROM tasks AS r
            WHERE r.qid = %(qid)s AND r.grp = s.name AND r.grp IS NOT NULL
              AND r.due_ms IS NOT NULL
            ORDER BY r.due_ms, r.id
            OFFSET s.taken LIMIT 1) AS next_due
    FROM (
        SELECT l.*, coalesce(t.n, 0) AS taken, coalesce(f.n, 0) AS found,
               coalesce(d.n, 0) AS started
        FROM limits AS l
        LEFT JOIN taken AS t ON t.turn = l.turn
        LEFT JOIN found AS f ON f.turn = l.turn
        LEFT JOIN started AS d ON d.grp = l.name
    ) AS s
), held AS (
    SELECT s.name,
           s.name <> '' AND %(group_running)s > 0
               AND s.running + s.started >= %(group_running)s AS at_limit,
           CASE WHEN s.name <> '' AND %(group_interval)s > 0 AND s.new_tat IS NOT NULL
                THEN greatest(s.new_tat, %(now)s) - (%(group_burst)s - 1) * %(group_interval)s
           END AS opens
    FROM served AS s
    WHERE s.next_due <= %(horizon)s
), turned AS (
    UPDATE task_groups AS g
    SET tat = s.new_tat,
        ready_ms = CASE WHEN s.next_due IS NULL AND g.xmin = s.seen THEN NULL
                        WHEN s.next_due IS NULL THEN g.ready_ms
                        WHEN g.xmin = s.seen THEN greatest(s.next_due, %(now)s)
                        ELSE least(g.ready_ms, greatest(s.next_due, %(now)s)) END
    FROM served AS s
    WHERE g.qid = %(qid)s AND g.name = s.name AND s.reached
), took AS (
    UPDATE queues AS q
    SET tat = CASE WHEN %(interval)s > 0 AND s.n > 0 THEN a.base + s.n * %(interval)s
                   ELSE q.tat END,
        waiting = q.waiting OR (%(max_running)s > 0 AND a.running + s.n >= %(max_running)s)
                  OR coalesce((SELECT bool_or(at_limit) FROM held), false)
    FROM allowed AS a, (SELECT count(token) AS n FROM leased) AS s
    WHERE q.qid = %(qid)s
)
SELECT id, token, stalls, claimed_due_ms, record, priority, NULL::bigint, NULL::boolean,
       NULL::boolean, NULL::double precision
FROM leased
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT count(*) FROM served),
       coalesce((SELECT bool_or(next_due IS NULL) FROM served), false),
       coalesce((SELECT bool_or(at_limit) FROM held), false),
       (SELECT min(opens) FROM held WHERE opens > %(now)s + 1e-6)
