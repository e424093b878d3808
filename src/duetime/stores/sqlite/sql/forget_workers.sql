-- forget_workers: delete a worker's record, and every record that lapsed.
-- Parameters: ? namespace, ? id (of the worker that left; '' for none), ? now ms.
DELETE FROM duetime_workers WHERE namespace = ?1 AND (id = ?2 OR until_ms < ?3)
