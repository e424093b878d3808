-- caller_identity: which server, database and store schema a connection reaches, to prove
-- that an application's connection (schedule(..., connection=)) is the store's database:
-- the server's start time tells two servers apart, the database its name, and whether the
-- schema holds duetime's tasks.
-- Parameters: %(tasks)s (the store's tasks table, schema-qualified and quoted).
-- Returns one row: the database, the server's start time, whether the table exists.
SELECT current_database(), pg_postmaster_start_time(), to_regclass(%(tasks)s) IS NOT NULL
