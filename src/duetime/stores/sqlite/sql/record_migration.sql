-- record_migration: note a migration as applied, in the transaction that applied it.
-- Parameters: ? version, ? name, ? applied (epoch ms).
INSERT INTO duetime_schema (version, name, applied_ms) VALUES (?, ?, ?)
