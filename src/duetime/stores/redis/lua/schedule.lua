-- schedule: add tasks of one type, or move and update them when their id exists.
--
-- Scheduling an id again starts a new occurrence: it leaves the dead letters, and its
-- stall count and error are cleared (its failures live in its record, replaced here). A
-- run of the same id still in progress keeps its lease and finishes; it will not
-- reschedule over the new occurrence. Running it twice gives the same result (ZADD and
-- HSET overwrite).
--
-- This is the producer's hot path, so it spends few calls: reads check the type of the
-- keys they touch, and the first write (HSET on data) checks its own, before anything
-- is written.
--
-- Resending it is safe. Writing the same tasks twice gives the same tasks, except when a
-- task was due so soon that a worker ran it between the two: then it would run twice. So
-- when a task is due within a minute (by the server's clock), the call leaves a marker
-- under its own key, and a call that finds its marker writes nothing. A caller that knows
-- every task is due much later leaves the marker's key out, and the clock goes unread.
--
-- A write made under a claim of another type (a poller's call) carries that claim's token,
-- and is refused while the type's fence (raise_fence.lua) is above it: a later claim began
-- writing. A resent call whose marker is there went through before, and is not refused.
--
-- KEYS[1] due    ZSET  id -> due time (ms, to the microsecond)
-- KEYS[2] data   HASH  id -> record (JSON)
-- KEYS[3] dead   ZSET  id -> time of death (ms)
-- KEYS[4] meta   HASH  s:<id>, e:<id> -> stalls, last error (see the preamble)
-- KEYS[5] fence  STRING  the type's fence (read only when ARGV[4] is a token)
-- KEYS[6] order  ZSET  the due tasks by priority (see _lanes.lua)
-- KEYS[7] lane   HASH  id -> priority, for tasks of a priority other than 0
-- KEYS[8] group  HASH  id -> group, KEYS[9] groups ZSET, KEYS[10] ready ZSET: the groups
--                (see _groups.lua)
-- KEYS[11] call  STRING  this call's marker (optional: without it, no marker)
-- ARGV[1] wake channel
-- ARGV[2] task type (the first word of a wake message)
-- ARGV[3] "1" to write only ids that do not exist yet (due, running or dead), else "0"
-- ARGV[4] the token the write is made under, or '' for a write under none
-- ARGV[5] the tasks' priorities, one a triple separated by spaces, or '' when all are 0
-- ARGV[6] the tasks' groups, one a triple, each followed by a newline ('' for none), or
--         '' when none has a group
-- ARGV[7..] triples: id, due ms (a decimal string: to the microsecond), record; ids are
--         distinct
--
-- With only_new, an id that exists with the very record given is this task, written by an
-- earlier send of the call: it counts as done, not as taken.
--
-- Returns {n, id...}: the number of tasks written, then (only_new) the ids left alone
-- because another task holds them. A resent call already done writes nothing and answers
-- {0, id...} with the first call's ids left alone.
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments, or a fence that is
-- not a number; {-3, message} the server refused the first write (out of memory);
-- {-4, task type, token, fence} the fence is above the token. Nothing is written.
-- include _lanes.lua _groups.lua

if #ARGV < 9 or (#ARGV - 6) % 3 ~= 0 then
  return {-2, 'expected id, due, record triples'}
end
local priorities = {}
for p in string.gmatch(ARGV[5], '%S+') do
  local n = tonumber(p)
  if not n or n ~= math.floor(n) or n < -100 or n > 100 then
    return {-2, 'a priority must be an integer of -100 to 100'}
  end
  priorities[#priorities + 1] = n
end
if #priorities > 0 and #priorities ~= (#ARGV - 6) / 3 then
  return {-2, 'expected a priority a triple'}
end
local groups = {}
for g in string.gmatch(ARGV[6], '([^\n]*)\n') do
  groups[#groups + 1] = g
end
if ARGV[6] ~= '' and #groups ~= (#ARGV - 6) / 3 then
  return {-2, 'expected a group a triple'}
end
local gk = {group = KEYS[8], groups = KEYS[9], ready = KEYS[10]}
-- A type without priorities and groups (the common case) has none of their five keys:
-- one call finds that, where checking and keeping them would take nine.
local extras = #priorities > 0 or ARGV[6] ~= ''
    or redis.call('EXISTS', KEYS[6], KEYS[7], gk.group, gk.groups, gk.ready) > 0
if extras then
  local wrong = wrong_type({KEYS[6], 'zset', KEYS[7], 'hash', gk.group, 'hash',
                            gk.groups, 'zset', gk.ready, 'zset'})
  if wrong then
    return {-1, wrong}
  end
end
local token = ARGV[4]
if token ~= '' then
  if not string.match(token, '^%d+$') then
    return {-2, 'the token must be an integer >= 0'}
  end
  if wrong_type({KEYS[5], 'string'}) then
    return {-1, KEYS[5]}
  end
  local fence = redis.call('GET', KEYS[5]) or '0'
  if not string.match(fence, '^%d+$') then
    return {-2, 'the fence ' .. KEYS[5] .. ' holds something other than a number'}
  end
  if tonumber(fence) > tonumber(token)
      and not (KEYS[11] and redis.call('EXISTS', KEYS[11]) == 1) then
    return {-4, ARGV[2], token, fence}
  end
end
local only_new = ARGV[3] == '1'
local existing = {}
if only_new then
  local ids = {}
  for i = 7, #ARGV, 3 do
    ids[#ids + 1] = ARGV[i]
  end
  local found = redis.pcall('HMGET', KEYS[2], unpack(ids))
  if failed(found) then
    return {-1, KEYS[2]}
  end
  for k, id in ipairs(ids) do
    existing[id] = found[k]
  end
end
local zadd, hset, ids, taken, lanes, grouped = {}, {}, {}, {}, {}, {}
local earliest
for i = 7, #ARGV, 3 do
  local id, due, record = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local d = tonumber(due)
  if not d or id == '' or record == '' then
    return {-2, 'bad triple at ' .. i}
  end
  local stored = existing[id]
  if stored then  -- only_new: an id that exists is left alone
    if stored ~= record then
      taken[#taken + 1] = id
    end
  else
    if not earliest or d < tonumber(earliest) then
      earliest = due
    end
    zadd[#zadd + 1] = due
    zadd[#zadd + 1] = id
    hset[#hset + 1] = id
    hset[#hset + 1] = record
    ids[#ids + 1] = id
    if extras then
      lanes[#lanes + 1] = {id, due, priorities[(i - 4) / 3] or 0}
      grouped[#grouped + 1] = {id, due, groups[(i - 4) / 3] or ''}
    end
  end
end
if #ids == 0 then
  return {0, unpack(taken)}
end

local MARK_WITHIN_MS, MARK_FOR_MS = 60000, 60000
local clock = KEYS[11] and redis.call('TIME')
if clock and tonumber(earliest) <= tonumber(clock[1]) * 1000 + MARK_WITHIN_MS then
  local answer = #taken > 0 and cjson.encode(taken) or '1'
  local marked = redis.pcall('SET', KEYS[11], answer, 'NX', 'PX', MARK_FOR_MS)
  if failed(marked) then
    if string.find(marked.err, 'WRONGTYPE', 1, true) then
      return {-1, KEYS[11]}
    end
    return {-3, marked.err}
  end
  if not marked then  -- resent after its reply was lost: done already
    local first = redis.call('GET', KEYS[11])
    if first and first ~= '1' then
      return {0, unpack(cjson.decode(first))}
    end
    return {0}
  end
end

local head = redis.pcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if failed(head) then
  return {-1, KEYS[1]}
end
-- Dead letters and meta fields are rare: one call finds that neither key exists.
local dead, has_meta
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
  dead = redis.pcall('ZMSCORE', KEYS[3], unpack(ids))
  if failed(dead) then
    return {-1, KEYS[3]}
  end
  has_meta = redis.call('EXISTS', KEYS[4]) == 1
  if has_meta and wrong_type({KEYS[4], 'hash'}) then
    return {-1, KEYS[4]}
  end
end
local first = redis.pcall('HSET', KEYS[2], unpack(hset, 1, math.min(#hset, BULK_SLICE)))
if failed(first) then
  if string.find(first.err, 'WRONGTYPE', 1, true) then
    return {-1, KEYS[2]}
  end
  return {-3, first.err}  -- out of memory, say: nothing was written
end

-- Written from here on.
bulk('HSET', KEYS[2], hset, BULK_SLICE + 1)
if extras then
  lane_add(KEYS[6], KEYS[7], KEYS[1], lanes)
  if #priorities > 0 or redis.call('EXISTS', KEYS[7]) == 1 then
    lane_keep(KEYS[7], lanes)
  end
  group_keep(gk, grouped, group_add(gk, KEYS[1], grouped))
end
bulk('ZADD', KEYS[1], zadd)
if dead then
  local revived = {}
  for k, id in ipairs(ids) do
    if dead[k] then
      revived[#revived + 1] = id
    end
  end
  bulk('ZREM', KEYS[3], revived)
end
if has_meta then
  bulk('HDEL', KEYS[4], meta_fields(ids))
end
wake_if_earlier(ARGV[1], ARGV[2], earliest, head[2])
return {#ids, unpack(taken)}
