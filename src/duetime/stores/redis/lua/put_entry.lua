-- put_entry: write expiring entries of one type, each a task due at its expiry.
--
-- A live entry (due after now) gets the new record, and the new due time unless keep_ttl.
-- An entry that expired but no worker has claimed yet is first moved, as it is and still
-- due, to "<id>@<its due ms>", so that its expiry is still handled; the entry is then
-- written new, as is one whose id is free, running or dead (as schedule writes it: a new
-- occurrence, out of the dead letters, stalls and error cleared). Running it twice gives
-- the same result: the second time every entry is live.
--
-- KEYS[1] due, KEYS[2] data, KEYS[3] dead, KEYS[4] meta, KEYS[5] order, KEYS[6] lane (the
-- priorities, see _lanes.lua: an entry has priority 0, and is in order while it exists),
-- KEYS[7] group, KEYS[8] groups, KEYS[9] ready (see _groups.lua: an entry has no group)
-- ARGV[1] wake channel, ARGV[2] task type, ARGV[3] now ms, ARGV[4] "1" to keep a live
-- entry's expiry, else "0"
-- ARGV[5..] triples: id, due ms (integer string), record; ids are distinct
--
-- Returns, per entry, the due time (ms) it has now.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.
-- include _lanes.lua _groups.lua

local due, data, dead, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order, lane = KEYS[5], KEYS[6]
local gk = {group = KEYS[7], groups = KEYS[8], ready = KEYS[9]}
local bad = wrong_type({due, 'zset', data, 'hash', dead, 'zset', meta, 'hash', order, 'zset',
                        lane, 'hash', gk.group, 'hash', gk.groups, 'zset', gk.ready, 'zset'})
if bad then
  return {-1, bad}
end
local now, keep_ttl = tonumber(ARGV[3]), ARGV[4] == '1'
if not now or #ARGV < 7 or (#ARGV - 4) % 3 ~= 0 then
  return {-2, 'expected now, keep_ttl and id, due, record triples'}
end
for i = 5, #ARGV, 3 do
  if ARGV[i] == '' or ARGV[i + 2] == '' or not tonumber(ARGV[i + 1]) then
    return {-2, 'bad triple at ' .. i}
  end
end

local head = head_score(due)
local out, earliest = {}, nil
for i = 5, #ARGV, 3 do
  local id, at, record = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local current = redis.call('ZSCORE', due, id)
  if current and tonumber(current) > now then  -- live
    if keep_ttl then
      at = current
    end
  else
    if current then  -- expired, not claimed yet: its expiry is still handled
      local aside = id .. '@' .. string.format('%d', tonumber(current))
      lane_add(order, lane, due, {{aside, current, 0}})
      group_add(gk, due, {{aside, current, ''}})
      redis.call('ZADD', due, current, aside)
      redis.call('HSET', data, aside, redis.call('HGET', data, id) or record)
      if not earliest or tonumber(current) < tonumber(earliest) then
        earliest = current
      end
    end
    redis.call('ZREM', dead, id)
    redis.call('HDEL', meta, 's:' .. id, 'e:' .. id)
  end
  lane_add(order, lane, due, {{id, at, 0}})
  if group_add(gk, due, {{id, at, ''}}) then
    redis.call('HDEL', gk.group, id)
  end
  redis.call('ZADD', due, at, id)
  redis.call('HSET', data, id, record)
  if not earliest or tonumber(at) < tonumber(earliest) then
    earliest = at
  end
  out[#out + 1] = tonumber(at)
end
wake_if_earlier(ARGV[1], ARGV[2], earliest, head)
return out
