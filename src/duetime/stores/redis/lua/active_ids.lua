-- active_ids: the ids of a type's tasks that wait or run (not the dead letters), each once.
--
-- KEYS[1] due (ZSET id -> due ms), KEYS[2] running (ZSET id -> lease deadline ms)
-- ARGV[1] limit (> 0): return at most this many
--
-- Returns the ids: running ones first (earliest lease deadline first), then waiting ones
-- (earliest due first). A task rescheduled while it runs is listed once.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments.

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'zset'})
if bad then
  return {-1, bad}
end
local limit = tonumber(ARGV[1])
if not limit or limit < 1 then
  return {-2, 'limit must be a number over 0'}
end
local ids = redis.call('ZRANGE', KEYS[2], 0, limit - 1)
if #ids >= limit then
  return ids
end
local seen = {}
for _, id in ipairs(ids) do
  seen[id] = true
end
-- Waiting ids past the running ones: at most `limit` of them can be new.
local waiting = redis.call('ZRANGE', KEYS[1], 0, limit - 1)
for _, id in ipairs(waiting) do
  if #ids >= limit then
    break
  end
  if not seen[id] then
    ids[#ids + 1] = id
  end
end
return ids
