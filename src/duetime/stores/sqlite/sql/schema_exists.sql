-- schema_exists: whether the file has duetime's version table (a file without one is new
-- to duetime, even if other applications keep their own tables in it).
-- Parameters: none.
-- Returns one row: 1 when the table exists, else 0.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'duetime_schema'
