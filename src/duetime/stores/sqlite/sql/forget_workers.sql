-- forget_workers: delete every record that lapsed.
-- Parameters: ? namespace, ? now ms.
DELETE FROM duetime_workers WHERE namespace = ?1 AND until_ms < ?2
