-- schedule_name_owner: the task type a cron schedule name belongs to.
-- Parameters: ? namespace, ? name.
-- Returns no row or one: type.
SELECT type FROM duetime_crons WHERE namespace = ? AND name = ?
