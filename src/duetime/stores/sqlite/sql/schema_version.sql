-- schema_version: the file's schema version, the highest migration applied.
-- Parameters: none.
-- Returns one row: the version, or NULL when no migration was recorded.
SELECT max(version) FROM duetime_schema
