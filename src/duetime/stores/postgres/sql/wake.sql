-- wake: tell listeners that a task became the earliest of its type (delivered at commit).
-- Parameters: %(channel)s, %(payload)s ("<due ms> <type>").
SELECT pg_notify(%(channel)s, %(payload)s)
