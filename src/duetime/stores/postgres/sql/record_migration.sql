-- record_migration: note a migration as applied, in the transaction that applied it.
-- Parameters: %(version)s, %(name)s.
INSERT INTO schema_version (version, name, applied_ms)
VALUES (%(version)s, %(name)s, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
