-- extend_lease: push the lease deadline of running tasks of one type, each checked
-- against its token, so a lease that was lost stays lost. Running it twice gives the same
-- result.
--
-- KEYS[1] running (ZSET id -> lease deadline ms), KEYS[2] lease (HASH id -> "<token>|<due>")
-- ARGV[1] new deadline ms, ARGV[2..] pairs: id, token
--
-- Returns the ids whose lease that token no longer holds (their deadline is untouched).
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.

local bad = wrong_type({KEYS[1], 'zset', KEYS[2], 'hash'})
if bad then
  return {-1, bad}
end
if not tonumber(ARGV[1]) or #ARGV < 3 or (#ARGV - 1) % 2 ~= 0 then
  return {-2, 'expected a deadline and id, token pairs'}
end
local ids, tokens = {}, {}
for i = 2, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
  tokens[#tokens + 1] = ARGV[i + 1]
end
local leases = redis.call('HMGET', KEYS[2], unpack(ids))
local held, lost = {}, {}
for k, id in ipairs(ids) do
  if lease_token(leases[k]) == tokens[k] then
    held[#held + 1] = ARGV[1]
    held[#held + 1] = id
  else
    lost[#lost + 1] = id
  end
end
if #held > 0 then
  bulk('ZADD', KEYS[1], held)
end
return lost
