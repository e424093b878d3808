-- raise_fence: raise a type's fence to a token, unless it is above it already.
--
-- The fence is the highest token, from a claim of another type (a poller's call), that
-- began writing to this type; a write carrying a lower one is refused (schedule.lua). A
-- poller's call raises its handler type's fence before it reads anything, so a call that
-- was overtaken (its worker paused past its lease, and a later claim's call began) can
-- no longer write. Running it twice gives the same result.
--
-- KEYS[1] fence  STRING  the type's fence (missing: 0)
-- ARGV[1] token (an integer >= 0)
--
-- Returns {1} when the fence was not above the token (it is the token now), {0, fence}
-- when it was (nothing is written).
-- Errors: {-1, key} the key holds another type; {-2, what} a token or a fence that is not
-- an integer. Nothing is written.

local bad = wrong_type({KEYS[1], 'string'})
if bad then
  return {-1, bad}
end
if not string.match(ARGV[1] or '', '^%d+$') then
  return {-2, 'the token must be an integer >= 0'}
end
local fence = redis.call('GET', KEYS[1]) or '0'
if not string.match(fence, '^%d+$') then
  return {-2, 'the fence ' .. KEYS[1] .. ' holds something other than a number'}
end
if tonumber(fence) > tonumber(ARGV[1]) then
  return {0, fence}
end
redis.call('SET', KEYS[1], ARGV[1])
return {1}
