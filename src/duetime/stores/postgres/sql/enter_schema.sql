-- enter_schema: put the store's schema on the search path of an application's connection
-- for the store's statements (they name their tables unqualified), for the session: inside
-- the application's transaction a rollback takes it back, and leave_schema.sql restores it.
-- Parameters: %(schema)s.
-- Returns one row: the search path it replaced.
SELECT current_setting('search_path') AS was, set_config('search_path', %(schema)s, false)
