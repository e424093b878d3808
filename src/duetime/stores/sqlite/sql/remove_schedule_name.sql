-- remove_schedule_name: forget a cron schedule name; running it twice is harmless.
-- Parameters: ? namespace, ? name.
DELETE FROM duetime_crons WHERE namespace = ? AND name = ?
