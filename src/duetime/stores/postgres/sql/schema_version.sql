-- schema_version: the schema's version, the highest migration applied; the caller checks
-- first that the table exists (to_regclass).
-- Parameters: none.
-- Returns one row: the version, or NULL when no migration was recorded.
SELECT max(version) FROM schema_version
