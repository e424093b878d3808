-- beat: write a worker's heartbeat record, live until a time; and forget the
-- records that lapsed. Records are for people watching (duetime.features.telemetry), not for claims.
--
-- KEYS[1] workers (HASH worker id -> record), KEYS[2] workers until (ZSET worker id -> ms
-- the record lapses at)
-- ARGV[1] worker id, ARGV[2] record (JSON, not empty), ARGV[3] until ms,
-- ARGV[4] now ms
--
-- Returns {1}.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.

local bad = wrong_type({KEYS[1], 'hash', KEYS[2], 'zset'})
if bad then
  return {-1, bad}
end
local until_ms, now = tonumber(ARGV[3]), tonumber(ARGV[4])
if not until_ms or not now then
  return {-2, 'until and now must be numbers'}
end
if ARGV[2] == '' then
  return {-2, 'the record is empty'}
end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4])
if #lapsed > 0 then
  redis.call('HDEL', KEYS[1], unpack(lapsed))
  redis.call('ZREM', KEYS[2], unpack(lapsed))
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], until_ms, ARGV[1])
return {1}
