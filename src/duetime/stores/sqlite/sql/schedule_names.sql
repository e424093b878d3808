-- schedule_names: every cron schedule name of a namespace, with its task type.
-- Parameters: ? namespace.
-- Returns rows: name, type.
SELECT name, type FROM duetime_crons WHERE namespace = ? ORDER BY name
