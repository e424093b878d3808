-- read_fence: a queue's fence, which a write made under a token checks in its transaction.
-- Parameters: ? qid.
-- Returns one row: fence.
SELECT fence FROM duetime_queues WHERE qid = ?
