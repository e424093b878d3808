-- add_counts: add per-minute counts, each minute a hash that expires by itself once it is
-- older than the hour kept.
--
-- KEYS[i] the hash of one minute (field "<what>:<task type>" -> count)
-- ARGV[1] how long past its minute's start each hash is kept (ms); ARGV[2..], for each key
-- in turn: its minute's start (ms), its number of fields n, and n pairs of field and count
--
-- Returns {1}.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.

local spec = {}
for i = 1, #KEYS do
  spec[#spec + 1] = KEYS[i]
  spec[#spec + 1] = 'hash'
end
local bad = wrong_type(spec)
if bad then
  return {-1, bad}
end
local keep = tonumber(ARGV[1])
if not keep then
  return {-2, 'keep must be a number'}
end
-- Check every argument before the first write.
local at = 2
for i = 1, #KEYS do
  local minute, n = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  if not minute or not n then
    return {-2, 'minute and field count must be numbers'}
  end
  for j = 0, n - 1 do
    if not tonumber(ARGV[at + 3 + 2 * j]) then
      return {-2, 'counts must be numbers'}
    end
  end
  at = at + 2 + 2 * n
end
at = 2
for i = 1, #KEYS do
  local minute, n = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  for j = 0, n - 1 do
    redis.call('HINCRBY', KEYS[i], ARGV[at + 2 + 2 * j], ARGV[at + 3 + 2 * j])
  end
  redis.call('PEXPIREAT', KEYS[i], minute + keep)
  at = at + 2 + 2 * n
end
return {1}
