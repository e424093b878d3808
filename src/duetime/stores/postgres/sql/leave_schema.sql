-- leave_schema: give an application's connection back its own search path (enter_schema.sql).
-- Parameters: %(path)s.
SELECT set_config('search_path', %(path)s, false)
