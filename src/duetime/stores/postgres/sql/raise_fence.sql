-- raise_fence: raise a queue's fence to a token, unless it is above it already. Waits for
-- a write that read the fence (read_fence.sql) to commit.
-- Parameters: %(qid)s, %(token)s.
-- Returns one row (fence) when the fence was not above the token (it is the token now),
-- none when it was.
UPDATE queues SET fence = %(token)s
WHERE qid = %(qid)s AND fence <= %(token)s
RETURNING fence
