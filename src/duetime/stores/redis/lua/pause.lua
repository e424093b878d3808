-- pause: pause a task type (no claim starts its tasks) or resume it, and wake its workers
-- either way, so that a paused type stops within a wake-up and a resumed one starts.
--
-- KEYS[1] gate (HASH: the type's gates, see _gate.lua)
-- ARGV[1] "1" to pause, "0" to resume, ARGV[2] wake channel, ARGV[3] task type,
-- ARGV[4] now ms (the wake-up's time)
--
-- Returns {1} when it changed the type's state, {0} when it was so already.
-- Errors: {-1, key} the key holds another type; {-2, what} bad arguments. Nothing is written.

local gate = KEYS[1]
local bad = wrong_type({gate, 'hash'})
if bad then
  return {-1, bad}
end
if (ARGV[1] ~= '1' and ARGV[1] ~= '0') or not tonumber(ARGV[4]) then
  return {-2, 'pause is "1" or "0", and now a number'}
end
local changed
if ARGV[1] == '1' then
  changed = redis.call('HSET', gate, 'paused', '1')
else
  changed = redis.call('HDEL', gate, 'paused')
end
wake_if_earlier(ARGV[2], ARGV[3], ARGV[4], nil)
return {changed}
