-- now_ms: the database's clock in epoch milliseconds (clock_timestamp(): the time of the
-- call, not of the transaction's start).
-- Parameters: none.
-- Returns one row: ms (float).
SELECT extract(epoch FROM clock_timestamp())::float8 * 1000
