-- add_counts: add counts (parallel arrays, one element per count) to what each minute
-- holds, and delete the minutes that start before the oldest kept.
-- Parameters: %(namespace)s, %(minutes)s bigint[], %(types)s text[], %(whats)s text[],
-- %(ns)s bigint[], %(oldest_ms)s.
WITH dropped AS (
    DELETE FROM minutes WHERE namespace = %(namespace)s AND minute_ms < %(oldest_ms)s
)
INSERT INTO minutes (namespace, minute_ms, type, what, n)
SELECT %(namespace)s, c.minute_ms, c.type, c.what, c.n
FROM unnest(%(minutes)s::bigint[], %(types)s::text[], %(whats)s::text[], %(ns)s::bigint[])
    AS c (minute_ms, type, what, n)
ON CONFLICT (namespace, minute_ms, type, what) DO UPDATE SET n = minutes.n + excluded.n
