-- remove_entry: remove a live expiring entry (due after now); an expired one is left to be
-- handled. Running it twice gives the same result.
--
-- KEYS[1] due, KEYS[2] data, KEYS[3] meta
-- ARGV[1] id, ARGV[2] now ms
--
-- Returns {1} when a live entry was removed, else {0}.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'hash'})
if bad then
  return {-1, bad}
end
local now = tonumber(ARGV[2])
if not now then
  return {-2, 'now must be a number'}
end
local id = ARGV[1]
local current = redis.call('ZSCORE', KEYS[1], id)
if not current or tonumber(current) <= now then
  return {0}
end
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[3], unpack(meta_fields({id})))
return {1}
