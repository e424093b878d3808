-- add_run: record a finished run in its type's history. Run by executemany.
-- Parameters: ? qid, ? id, ? occurrence ms, ? attempt, ? started ms (NULL: unknown),
-- ? finished ms, ? outcome, ? error (NULL), ? traceback (NULL), ? worker (NULL).
INSERT INTO duetime_runs
    (qid, id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace, worker)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
