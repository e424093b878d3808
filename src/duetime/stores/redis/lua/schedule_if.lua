-- schedule_if: write tasks of one type on conditions (if_exists keep or merge, unique_for),
-- each checked against what its id holds in the same atomic step as the write.
--
-- A task is pending while it has a record and waits (in due) or runs (holds a lease); a
-- dead letter is not pending. Per task, in order:
--   unique ms > 0 and its finished key holds a time less than that before now: 'recent',
--     nothing written (settle.lua sets the key, which expires by itself);
--   keep, and a task is pending: 'kept', with the pending task's due time (its run's,
--     when it only runs);
--   merge with changes: the changes are deep-merged into what is pending now (see
--     _merge.lua), in this step, and the merged task written as below (a merge that
--     cannot be read here, or whose payload would be over its most bytes, is answered
--     'changed', for the caller to merge and say what is wrong);
--   merge, and what is pending is not what the caller found (expected): 'changed', with
--     what is pending now; the caller merges into that and sends again;
--   merge into a task that waits: its record is replaced, and its due time unless
--     keep_due; its occurrence (stalls, error, dead letters) is left as it is;
--   otherwise the task is written as schedule.lua writes it: a new occurrence (it leaves
--     the dead letters, its stalls and error are cleared) of the priority given; a run in
--     progress keeps its lease, and its outcome will not overwrite the new occurrence.
-- A merge into a task that waits leaves its priority and its group as they are (see
-- _lanes.lua, _groups.lua).
--
-- Resending it is safe: a call that wrote something keeps its reply for a short while
-- under its own key, and a call with that key again returns it (a task written by the
-- first send and run since is neither written again nor reported 'recent').
--
-- KEYS[1] due    ZSET  id -> due time (ms)
-- KEYS[2] data   HASH  id -> record (JSON)
-- KEYS[3] dead   ZSET  id -> time of death (ms)
-- KEYS[4] meta   HASH  s:<id>, e:<id> -> stalls, last error
-- KEYS[5] lease  HASH  id -> "<token>|<due ms>" while running
-- KEYS[6] this call's key (STRING: its reply, for a resent call)
-- KEYS[7] order  ZSET  the due tasks by priority, KEYS[8] lane HASH id -> priority
-- KEYS[9] group  HASH  id -> group, KEYS[10] groups ZSET, KEYS[11] ready ZSET (see
--   _groups.lua)
-- KEYS[11 + i] the i-th task's finished key (STRING: when a run of it finished, ms)
-- ARGV[1] wake channel, ARGV[2] task type (the first word of a wake message)
-- ARGV[3] now ms, ARGV[4] how long to keep the reply for a resent call (ms)
-- ARGV[5..] per task eleven values: id, due ms, record, mode ('replace', 'keep' or
--   'merge'), unique ms ('0' for none), expected (merge: '' when the caller found nothing
--   pending, else 'w' (waits) or 'r' (only runs) followed by the pending record), keep_due
--   ('1' or '0'), priority (-100 to 100), group ('' for none), changes (merge: the JSON
--   object to merge into what is pending, '' for none: then expected applies), the most
--   bytes of a merged payload; ids are distinct
--
-- Returns three values per task, in order: verdict, then
--   1 written  due ms (string), ''
--   2 kept     the pending task's due ms (string), ''
--   3 recent   the finish remembered (ms, string), ''
--   4 changed  what is pending now ('' nothing, 'w' or 'r'), its record ('' for none)
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments; {-3, message} the
-- server refused the first write (out of memory). Nothing is written.
-- include _lanes.lua _groups.lua _merge.lua

local due, data, dead, meta, lease, call = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local order, lane = KEYS[7], KEYS[8]
local gk = {group = KEYS[9], groups = KEYS[10], ready = KEYS[11]}
local bad = wrong_type({due, 'zset', data, 'hash', dead, 'zset', meta, 'hash', lease, 'hash',
                        call, 'string', order, 'zset', lane, 'hash', gk.group, 'hash',
                        gk.groups, 'zset', gk.ready, 'zset'})
if bad then
  return {-1, bad}
end
local replay = redis.call('GET', call)
if replay then
  return cjson.decode(replay)  -- this call was sent before and its reply lost
end
local now, remember = tonumber(ARGV[3]), tonumber(ARGV[4])
local PER_TASK = 11
if not now or not remember or #ARGV < 4 + PER_TASK or (#ARGV - 4) % PER_TASK ~= 0 then
  return {-2, 'expected now, the replay time and eleven values per task'}
end
local count = (#ARGV - 4) / PER_TASK
if #KEYS ~= 11 + count then
  return {-2, 'expected one finished key per task'}
end
local MODES = {replace = true, keep = true, merge = true}

local items = {}
for k = 1, count do
  local a = 5 + (k - 1) * PER_TASK
  local item = {id = ARGV[a], due = ARGV[a + 1], record = ARGV[a + 2], mode = ARGV[a + 3],
                unique = tonumber(ARGV[a + 4]), expected = ARGV[a + 5],
                keep_due = ARGV[a + 6] == '1', finished = KEYS[11 + k],
                priority = tonumber(ARGV[a + 7]), group = ARGV[a + 8],
                changes = ARGV[a + 9], max_bytes = tonumber(ARGV[a + 10])}
  if item.id == '' or item.record == '' or not tonumber(item.due) or not MODES[item.mode]
      or not item.unique or item.unique < 0 or not item.priority
      or item.priority < -100 or item.priority > 100 or not item.max_bytes then
    return {-2, 'bad task at ' .. a}
  end
  if item.unique > 0 and wrong_type({item.finished, 'string'}) then
    return {-1, item.finished}
  end
  items[k] = item
end

-- Judge every task before any write (ids are distinct: no write changes another's verdict).
local reply, hset, zadd, fresh, lanes, kept_lanes = {}, {}, {}, {}, {}, {}
local grouped, kept_groups = {}, {}
local earliest
for k, item in ipairs(items) do
  local id = item.id
  local verdict, a, b = 1, item.due, ''
  local finished = item.unique > 0 and tonumber(redis.call('GET', item.finished) or '')
  local record = redis.call('HGET', data, id)
  local waits = redis.call('ZSCORE', due, id)
  local held = redis.call('HGET', lease, id)
  local run = lease_token(held) and held
  local pending = ''
  if record and waits then
    pending = 'w'
  elseif record and run then
    pending = 'r'
  end
  local merge_failed = false
  if item.mode == 'merge' and item.changes ~= '' and pending ~= '' and
      not (finished and finished > now - item.unique) then
    local into, size = merged_record(record, item.changes, pending == 'r', item.unique)
    if into and size <= item.max_bytes then
      item.record, item.expected = into, pending .. record
    else
      merge_failed = true
    end
  elseif item.mode == 'merge' and item.changes ~= '' then
    item.expected = ''  -- nothing pending: written as given
  end
  if finished and finished > now - item.unique then
    verdict, a = 3, tostring(finished)
  elseif item.mode == 'keep' and pending ~= '' then
    verdict = 2
    a = waits or string.match(run, '|(%d+)$') or ''
  elseif item.mode == 'merge' and (merge_failed or
      item.expected ~= (pending == '' and '' or pending .. record)) then
    verdict, a, b = 4, pending, record or ''
    if pending == '' then
      b = ''
    end
  elseif item.mode == 'merge' and pending == 'w' then
    if item.keep_due then
      a = waits
    end
    hset[#hset + 1] = id
    hset[#hset + 1] = item.record
    zadd[#zadd + 1] = a
    zadd[#zadd + 1] = id
    lanes[#lanes + 1] = {id, a}  -- its own priority
    grouped[#grouped + 1] = {id, a}  -- its own group
  else  -- a new occurrence
    hset[#hset + 1] = id
    hset[#hset + 1] = item.record
    zadd[#zadd + 1] = item.due
    zadd[#zadd + 1] = id
    fresh[#fresh + 1] = id
    lanes[#lanes + 1] = {id, item.due, item.priority}
    kept_lanes[#kept_lanes + 1] = lanes[#lanes]
    grouped[#grouped + 1] = {id, item.due, item.group}
    kept_groups[#kept_groups + 1] = grouped[#grouped]
  end
  if verdict == 1 and (not earliest or tonumber(a) < tonumber(earliest)) then
    earliest = a
  end
  reply[#reply + 1] = verdict
  reply[#reply + 1] = a
  reply[#reply + 1] = b
end
if #hset == 0 then
  return reply
end

local head = head_score(due)
local first = redis.pcall('HSET', data, unpack(hset, 1, math.min(#hset, BULK_SLICE)))
if failed(first) then
  return {-3, first.err}  -- out of memory, say: nothing was written
end

-- Written from here on.
bulk('HSET', data, hset, BULK_SLICE + 1)
lane_keep(lane, kept_lanes)
lane_add(order, lane, due, lanes)
group_keep(gk, kept_groups, group_add(gk, due, grouped))
bulk('ZADD', due, zadd)
if #fresh > 0 and redis.call('EXISTS', dead, meta) > 0 then
  bulk('ZREM', dead, fresh)
  bulk('HDEL', meta, meta_fields(fresh))
end
wake_if_earlier(ARGV[1], ARGV[2], earliest, head)
if remember > 0 then
  redis.call('SET', call, cjson.encode(reply), 'PX', remember)
end
return reply
