-- schedule_names: every cron schedule name of a namespace, with its task type.
-- Parameters: %(namespace)s.
-- Returns rows: name, type.
SELECT name, type FROM crons WHERE namespace = %(namespace)s ORDER BY name
