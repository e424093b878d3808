-- schedule_event: turn an event that every worker heard (a key expired) into one task: the
-- first call for the event writes the task and remembers the event for a while; later calls
-- for it write nothing. Running it twice gives the same result.
--
-- KEYS[1] the event's key (STRING), KEYS[2] due, KEYS[3] data, KEYS[4] dead, KEYS[5] meta,
-- KEYS[6] order, KEYS[7] lane (the priorities, see _lanes.lua: the task has priority 0),
-- KEYS[8] group, KEYS[9] groups, KEYS[10] ready (see _groups.lua: the task has no group)
-- ARGV[1] how long the event is remembered (ms), ARGV[2] wake channel, ARGV[3] task type,
-- ARGV[4] id, ARGV[5] due ms, ARGV[6] record
--
-- Returns {1} when this call wrote the task, {0} when the event was turned into one before.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.
-- include _lanes.lua _groups.lua

local event, due, data, dead, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local bad = wrong_type({event, 'string', due, 'zset', data, 'hash', dead, 'zset', meta, 'hash',
                        KEYS[6], 'zset', KEYS[7], 'hash', KEYS[8], 'hash', KEYS[9], 'zset',
                        KEYS[10], 'zset'})
if bad then
  return {-1, bad}
end
local window, at = tonumber(ARGV[1]), tonumber(ARGV[5])
if not window or window <= 0 or not at or ARGV[4] == '' or ARGV[6] == '' then
  return {-2, 'expected a window, an id, a due time and a record'}
end
if not redis.call('SET', event, '1', 'NX', 'PX', ARGV[1]) then
  return {0}
end
local id = ARGV[4]
local head = head_score(due)
lane_add(KEYS[6], KEYS[7], due, {{id, ARGV[5], 0}})
if group_add({group = KEYS[8], groups = KEYS[9], ready = KEYS[10]}, due, {{id, ARGV[5], ''}}) then
  redis.call('HDEL', KEYS[8], id)
end
redis.call('ZADD', due, ARGV[5], id)
redis.call('HSET', data, id, ARGV[6])
redis.call('ZREM', dead, id)
redis.call('HDEL', meta, 's:' .. id, 'e:' .. id)
wake_if_earlier(ARGV[2], ARGV[3], ARGV[5], head)
return {1}
