-- add_schedule_name: claim a cron schedule name for a task type unless it is taken;
-- returns the type the name belongs to either way.
-- Parameters: %(namespace)s, %(name)s, %(type)s.
-- Returns one row: type.
WITH added AS (
    INSERT INTO crons (namespace, name, type) VALUES (%(namespace)s, %(name)s, %(type)s)
    ON CONFLICT (namespace, name) DO NOTHING
    RETURNING type
)
SELECT type FROM added
UNION ALL
SELECT type FROM crons WHERE namespace = %(namespace)s AND name = %(name)s
LIMIT 1
