-- remove_schedule_name: forget a cron schedule name; running it twice is harmless.
-- Parameters: %(namespace)s, %(name)s.
DELETE FROM crons WHERE namespace = %(namespace)s AND name = %(name)s
