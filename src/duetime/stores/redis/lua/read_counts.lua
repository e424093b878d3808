-- read_counts: the per-minute count hashes of several minutes.
--
-- KEYS[i] the hash of one minute (field "<what>:<task type>" -> count)
--
-- Returns, for each key in turn, its fields and counts as a flat list (empty if missing).
-- Errors: {-1, key} a key holds another type.

local found = {}
for i = 1, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= 'hash' then
    return {-1, KEYS[i]}
  end
  found[i] = redis.call('HGETALL', KEYS[i])
end
return found
