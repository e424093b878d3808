-- hold: no claim starts a task of the type before a time, unless it is held longer already
-- (a handler's RateLimited, for the partitions of a type other than the one whose settle
-- held its own).
--
-- KEYS[1] gate (HASH: the type's gates, see _gate.lua)
-- ARGV[1] until ms
--
-- Returns {1} when it moved the hold, {0} when the type was held as long already.
-- Errors: {-1, key} the key holds another type; {-2, what} bad arguments. Nothing is written.

local gate = KEYS[1]
local bad = wrong_type({gate, 'hash'})
if bad then
  return {-1, bad}
end
local until_ms = tonumber(ARGV[1])
if not until_ms then
  return {-2, 'until must be a number'}
end
if until_ms <= (tonumber(redis.call('HGET', gate, 'hold') or '') or -math.huge) then
  return {0}
end
redis.call('HSET', gate, 'hold', string.format('%d', until_ms))
return {1}
