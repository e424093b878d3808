-- add_schedule_name: claim a cron schedule name for a task type, unless it is taken.
-- Parameters: ? namespace, ? name, ? type.
INSERT INTO duetime_crons (namespace, name, type) VALUES (?, ?, ?)
ON CONFLICT (namespace, name) DO NOTHING
