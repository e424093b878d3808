-- hasten: bring a waiting task's due time forward to `due`, unless it is due by then.
--
-- Only a task that waits moves: due, with no run of it holding a lease. A running task, one
-- rescheduled while it runs, a dead one or a missing one is left alone, so that hastening
-- never lets two runs of one id overlap. The record is not touched. Running it twice gives
-- the same result.
--
-- KEYS[1] due (ZSET id -> due ms), KEYS[2] lease (HASH id -> "<token>|<due ms>"),
-- KEYS[3] order, KEYS[4] lane (the priorities, see _lanes.lua: the task keeps its own),
-- KEYS[5] group, KEYS[6] groups, KEYS[7] ready (see _groups.lua: it keeps its group)
-- ARGV[1] id, ARGV[2] due ms, ARGV[3] wake channel, ARGV[4] task type (the first word of a
-- wake message)
--
-- Returns {1} when the task moved, {0} when it was due by then already, {2} when it does
-- not wait (running, dead or missing).
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.
-- include _lanes.lua _groups.lua

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'zset', KEYS[4], 'hash',
                        KEYS[5], 'hash', KEYS[6], 'zset', KEYS[7], 'zset'})
if bad then
  return {-1, bad}
end
local id, due = ARGV[1], tonumber(ARGV[2])
if not due then
  return {-2, 'due must be a number'}
end
local current = redis.call('ZSCORE', KEYS[1], id)
if not current or redis.call('HEXISTS', KEYS[2], id) == 1 then
  return {2}
end
if tonumber(current) <= due then
  return {0}
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
lane_add(KEYS[3], KEYS[4], KEYS[1], {{id, ARGV[2]}})
group_add({group = KEYS[5], groups = KEYS[6], ready = KEYS[7]}, KEYS[1], {{id, ARGV[2]}})
redis.call('ZADD', KEYS[1], due, id)
wake_if_earlier(ARGV[3], ARGV[4], ARGV[2], head[2])
return {1}
