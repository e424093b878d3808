-- gate_took: what a claim under a rate or a global concurrency leaves in its queue's gates:
-- the rate's new theoretical arrival time, and whether the type is now at its global
-- concurrency (a waiting flag the next settle that ends a run clears, waking the workers).
-- Parameters: ? tat (or NULL), ? waiting (0 or 1: 1 sets it, 0 leaves it), ? qid.
UPDATE duetime_queues SET tat = ?, waiting = max(waiting, ?) WHERE qid = ?
