-- raise_fence: raise a queue's fence to a token, unless it is above it already.
-- Parameters: ? token, ? qid, ? token.
-- Row count: 1 when the fence was not above the token (it is the token now), 0 when it was.
UPDATE duetime_queues SET fence = ? WHERE qid = ? AND fence <= ?
