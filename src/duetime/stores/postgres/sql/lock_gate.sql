-- lock_gate: the first statement of a claim under a rate or a global concurrency: lock the
-- queue's row for the claim's transaction, so that such claims of one type count running
-- tasks and move the rate's time one after the other (each later statement of the
-- transaction sees what the claims before it committed).
-- Parameters: %(qid)s.
SELECT qid FROM queues WHERE qid = %(qid)s FOR UPDATE
