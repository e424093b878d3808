-- add_run: add a row to a queue's run history: a batch of plain completions (batch set,
-- the run's own columns NULL) or one run. Run by executemany.
-- Parameters: ? qid, ? added (the queue's runs in all, this row's included), ? base ms,
-- ? keep, ? worker (NULL: unknown), ? batch (NULL: one run), ? id, ? occurrence ms,
-- ? attempt, ? started ms (NULL), ? outcome, ? error (NULL), ? traceback (NULL),
-- ? result (NULL).
INSERT INTO duetime_runs
    (qid, added, base_ms, keep, worker, batch, id, occurrence_ms, attempt, started_ms,
     outcome, error, trace, result)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
