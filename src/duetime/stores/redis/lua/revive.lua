-- revive: move a dead task of one type back to due, with a new record (the caller resets
-- its failures) or the one it has. Its stall count and error are cleared. Running it twice
-- gives the same result (the second call finds nothing dead).
--
-- KEYS[1] dead, KEYS[2] due, KEYS[3] data, KEYS[4] meta, KEYS[5] order, KEYS[6] lane (the
-- priorities, see _lanes.lua: the task keeps its own), KEYS[7] group, KEYS[8] groups,
-- KEYS[9] ready (see _groups.lua: the task keeps its group)
-- ARGV[1] id, ARGV[2] due ms, ARGV[3] wake channel, ARGV[4] task type,
-- ARGV[5] the new record, or '' to keep the one stored
--
-- Returns {1} when the task was dead and is due again, {0} when it was not dead.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments, or a dead letter
-- without a record to run (it was moved aside because its record was missing). Nothing
-- is written.
-- include _lanes.lua _groups.lua

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'zset', KEYS[3], 'hash', KEYS[4], 'hash',
                        KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash', KEYS[8], 'zset',
                        KEYS[9], 'zset'})
if bad then
  return {-1, bad}
end
if not tonumber(ARGV[2]) then
  return {-2, 'due must be a number'}
end
local id = ARGV[1]
if not redis.call('ZSCORE', KEYS[1], id) then
  return {0}
end
if redis.call('HEXISTS', KEYS[3], id) == 0 then
  return {-2, 'the dead task has no record to run'}
end
local head = head_score(KEYS[2])
redis.call('ZREM', KEYS[1], id)
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], id, ARGV[5])
end
redis.call('HDEL', KEYS[4], unpack(meta_fields({id})))
lane_add(KEYS[5], KEYS[6], KEYS[2], {{id, ARGV[2]}})
group_add({group = KEYS[7], groups = KEYS[8], ready = KEYS[9]}, KEYS[2], {{id, ARGV[2]}})
redis.call('ZADD', KEYS[2], ARGV[2], id)
wake_if_earlier(ARGV[3], ARGV[4], ARGV[2], head)
return {1}
