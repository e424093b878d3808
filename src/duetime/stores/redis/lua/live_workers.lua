-- live_workers: the heartbeat records of the workers live at a time.
--
-- KEYS[1] workers (HASH worker id -> record), KEYS[2] workers until (ZSET worker id -> ms)
-- ARGV[1] now ms
--
-- Returns the records, in the order of their worker ids.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments.

local bad = wrong_type({KEYS[1], 'hash', KEYS[2], 'zset'})
if bad then
  return {-1, bad}
end
if not tonumber(ARGV[1]) then
  return {-2, 'now must be a number'}
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf')
if #ids == 0 then
  return {}
end
table.sort(ids)
local records = redis.call('HMGET', KEYS[1], unpack(ids))
local found = {}
for _, record in ipairs(records) do
  if record then
    found[#found + 1] = record
  end
end
return found
