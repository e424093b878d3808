-- claim_plan: plan the rest of a claim's transaction (reap.sql, claim.sql, next_ms.sql)
-- along the state indexes, whatever the table's statistics say: each walks one index in
-- its order and stops early (ORDER BY ... LIMIT), which beats a sort of every matching
-- row by far. Without this a table filled since its last ANALYZE (a burst of tasks
-- scheduled moments ago: autovacuum analyzes it up to a minute later) looked small to the
-- planner, which then sorted every due task of the type for each claim.
-- JIT is off too: the cost the planner gives a sort it must still make (the claim of a type
-- with priorities orders the levels' first tasks, a few rows) is huge with enable_sort off,
-- and JIT compiling the statement for it took over a second, for a statement that runs in
-- a millisecond.
-- Parameters: none.
-- Returns one row (the settings' new values).
SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('jit', 'off', true)
