-- 0010_results: what a run's handler returned (docs/workflows.md, "Results").
--
-- runs.result: the JSON text of a done run's result, at most 64 KiB (the worker refuses a
-- larger one, sending the task to the dead letters); NULL for none (the handler returned
-- None, a run that failed, a batch row). A run with a result is a row of its own, never a
-- line of a batch, so that a type whose handlers return nothing writes as before.
ALTER TABLE runs ADD COLUMN result text;
