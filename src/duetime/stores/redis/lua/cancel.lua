-- cancel: remove a task of one type, whether due, dead or running.
--
-- A running task keeps its lease and its handler finishes, but its record is gone, so it
-- will neither be rescheduled nor retried. Running it twice gives the same result.
--
-- KEYS[1] due, KEYS[2] data, KEYS[3] dead, KEYS[4] meta, KEYS[5] order, KEYS[6] lane (the
-- priorities, see _lanes.lua: the task leaves both), KEYS[7] group, KEYS[8] groups (see
-- _groups.lua: the task leaves its group)
-- ARGV[1] id
--
-- Returns {1} when the task existed, {0} when it did not.
-- Errors: {-1, key} a key holds another type. Nothing is written.
-- include _groups.lua

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'zset', KEYS[4], 'hash',
                        KEYS[5], 'zset', KEYS[6], 'hash', KEYS[7], 'hash', KEYS[8], 'zset'})
if bad then
  return {-1, bad}
end
local id = ARGV[1]
group_drop({group = KEYS[7], groups = KEYS[8]}, id, redis.call('ZSCORE', KEYS[1], id))
local found = redis.call('ZREM', KEYS[1], id) + redis.call('ZREM', KEYS[3], id)
              + redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[4], unpack(meta_fields({id})))
redis.call('ZREM', KEYS[5], id)
redis.call('HDEL', KEYS[6], id)
return {found > 0 and 1 or 0}
