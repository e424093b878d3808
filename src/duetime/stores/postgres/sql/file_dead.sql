-- file_dead: file dead letters under ids of their own (a failed occurrence of a periodic
-- task, whose series goes on under the task's id). An existing id takes the dead
-- letter's time, record, error and group (its task's, as settle.sql returned it), and keeps
-- its other parts.
-- Parameters: %(qid)s, %(now)s; arrays of one length: %(ids)s, %(records)s, %(errors)s,
-- %(groups)s.
INSERT INTO tasks AS t (qid, id, dead_ms, record, error, grp)
SELECT %(qid)s, d.id, %(now)s, d.record, d.error, d.grp
FROM unnest(%(ids)s::text[], %(records)s::text[], %(errors)s::text[], %(groups)s::text[])
    AS d (id, record, error, grp)
ON CONFLICT (qid, id) DO UPDATE
SET dead_ms = excluded.dead_ms, record = excluded.record, error = excluded.error,
    grp = excluded.grp
