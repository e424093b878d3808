-- take_tokens: reserve the next n fencing tokens of a queue: last - n + 1 .. last. Tokens
-- are unique and increasing per (namespace, type), and never reused.
-- Parameters: ? n (> 0), ? qid.
-- Returns one row: last, the highest token reserved.
UPDATE duetime_queues SET last_token = last_token + ? WHERE qid = ? RETURNING last_token
