-- read_fence: a queue's fence, which a write made under a token checks in its transaction.
-- FOR SHARE holds the row until the write commits: a fence raised meanwhile (an UPDATE)
-- waits for it, and one raised before is what this reads.
-- Parameters: %(qid)s.
-- Returns one row: fence.
SELECT fence FROM queues WHERE qid = %(qid)s FOR SHARE
