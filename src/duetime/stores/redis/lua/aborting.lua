-- aborting: which of the runs a worker holds are marked to abort (see abort.lua). Only
-- reads.
--
-- KEYS[1] lease (HASH id -> "<token>|<due ms>"), KEYS[2] abort (HASH id -> token)
-- ARGV[1..] pairs: id, token (the runs held)
--
-- Returns the ids whose token holds the lease and is the one marked.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments.

local bad = wrong_type({KEYS[1], 'hash', KEYS[2], 'hash'})
if bad then
  return {-1, bad}
end
if #ARGV % 2 ~= 0 then
  return {-2, 'expected id, token pairs'}
end
local marked = {}
if #ARGV == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return marked
end
for i = 1, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[2], id) == token
      and lease_token(redis.call('HGET', KEYS[1], id)) == token then
    marked[#marked + 1] = id
  end
end
return marked
