-- settle: record the outcomes of claimed tasks of one type, each checked against its lease.
--
-- An outcome whose token no longer holds the task's lease (it expired and was reaped, or
-- the id was claimed again) is stale: nothing is written for it. Otherwise the run ends
-- (the task leaves running and its lease goes) and the op says what follows:
--   done     id token                 nothing: the record goes
--   done*    lines                    done for several runs, in one argument of
--                                     "<token>|<id>" lines (ids hold no control
--                                     characters; one argument is cheaper to send)
--   next     id token due record      the next occurrence of a periodic task
--   retry    id token due record err  another attempt of this occurrence
--   dead     id token record err      the dead letters
--   release  id token due             back to due (a shutdown hand-back)
--   hold     id token due until       back to due, as release, and the whole type held
--                                     until `until` (a handler's RateLimited: the gate
--                                     hash's hold, unless it holds longer already)
--   file     id record err            (after one of the above, applied only if that one
--                                     is kept) also file a dead letter under this id:
--                                     a failed occurrence of a periodic task
--   spawn    id due record            (after one of the above, applied only if that one
--                                     is kept) also schedule a new task: a cron tick
--                                     handed off to run on its own
--   finish   key window               (after done or dead, applied only if that one is
--                                     kept) remember when the task finished: set
--                                     KEYS[key] (its finished key) to now, expiring
--                                     after window ms (a task scheduled with
--                                     unique_for; see schedule_if.lua)
--   log      runs tally worker keep max_age
--                                     (before any ran or ran*) record runs in the type's
--                                     history KEYS[runs] and its tally KEYS[tally] (see
--                                     the preamble), by this worker, then trim it to its
--                                     newest `keep` runs and to those that finished at
--                                     most `max_age` ms before now
--   ran      started finished attempt occurrence outcome error trace
--                                     (after one of the outcomes, recorded only if that
--                                     one is kept) its run, an entry of its own; started
--                                     is '' when no handler ran
--   result   json                     (after ran) what that run's handler returned, kept
--                                     with its run (field v of its entry)
--   ran*     lines runs               done, and its run recorded as done, for several
--                                     runs: lines as done*'s, and in `runs` the runs
--                                     of those lines, a line each, in their order (as
--                                     the history's batch entries hold them: see the
--                                     preamble; ms before now, ARGV[1]). The runs of
--                                     those kept make one entry.
-- When the id was rescheduled while it ran (it is in due again), the new occurrence wins:
-- only the run's end is recorded. When it was cancelled (no record), next, retry, dead and
-- release write nothing else either: a cancelled task stays cancelled.
-- A settle that ends runs of a type whose gate hash says a claim found it at its global
-- concurrency (`wait`) clears that and wakes the type's workers: a slot is free.
-- Running it twice is harmless: the second time every outcome would be stale, so the reply
-- of the first is kept for a short while under the call's own key, and a resent call (its
-- reply was lost) returns it instead of reporting the outcomes it kept as lost.
--
-- KEYS[1] due, KEYS[2] running, KEYS[3] data, KEYS[4] lease, KEYS[5] meta, KEYS[6] dead,
-- KEYS[7] this call's key, KEYS[8] gate (HASH: the type's gates, see _gate.lua),
-- KEYS[9] order and KEYS[10] lane (the priorities, see _lanes.lua: a task back to due
-- keeps its priority; a task that ends loses it), KEYS[11] group, KEYS[12] groups and
-- KEYS[13] ready (see _groups.lua: a task back to due keeps its group, a task that ends
-- loses it, a spawned task has none; a run that ends leaves its group's runs), KEYS[14..] the
-- finished keys that finish ops name, and the run history and its tally that a log op
-- names
-- ARGV[1] now ms, ARGV[2] wake channel, ARGV[3] task type, ARGV[4] how long to keep the
-- reply for a resent call (ms), ARGV[5..] ops as above
--
-- Returns a list with, per outcome (file, spawn, log and ran entries excluded, each line of
-- done* and ran* counted), 1 (kept) or 0 (stale).
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments. Nothing is written.
-- include _lanes.lua _groups.lua

local due, running, data, lease = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local meta, dead, call, gate = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local order, lane = KEYS[9], KEYS[10]
local gk = {group = KEYS[11], groups = KEYS[12], ready = KEYS[13]}
local bad = wrong_type({due, 'zset', running, 'zset', data, 'hash', lease, 'hash',
                        meta, 'hash', dead, 'zset', call, 'string', gate, 'hash',
                        order, 'zset', lane, 'hash', gk.group, 'hash', gk.groups, 'zset',
                        gk.ready, 'zset'})
if bad then
  return {-1, bad}
end
local replay = redis.call('GET', call)
if replay then
  return cmsgpack.unpack(replay)  -- this call was sent before and its reply lost
end
local now, remember = ARGV[1], tonumber(ARGV[4])
if not tonumber(now) or not remember then
  return {-2, 'now and the replay time must be numbers'}
end

-- The fields after each op's name.
local ARITY = {done = 2, ['done*'] = 1, next = 4, retry = 5, dead = 4, release = 3, hold = 4,
               file = 3, spawn = 3, finish = 2, log = 5, ran = 7, result = 1,
               ['ran*'] = 2}
local OUTCOMES = {done = true, failed = true, dead = true, aborted = true}
-- Per item, in the order given: its table ({op, id, token, ...}), or false for a plain
-- completion of a done* or ran* line (most of a busy settle), which needs none; and its id
-- and token.
local items, ids, tokens = {}, {}, {}
local log, batch, runs, tally

-- The last item's table, made for a plain completion that an op after it adds to.
local function last_item()
  local k = #items
  if items[k] == false then
    items[k] = {op = 'done', id = ids[k], token = tokens[k]}
  end
  return items[k]
end

local i = 5
while i <= #ARGV do
  local op = ARGV[i]
  local n = ARITY[op]
  if not n or i + n > #ARGV then
    return {-2, 'bad op at ' .. i}
  end
  if op == 'done*' or op == 'ran*' then
    local first = #items + 1
    local n = first - 1  -- items and ids grow together; `#t` costs a search in Lua 5.1
    for line in string.gmatch(ARGV[i + 1], '[^\n]+') do
      local token, id = string.match(line, '^(%d+)|(.+)$')
      if not token then
        return {-2, 'bad line in ' .. op .. ' at ' .. (i + 1)}
      end
      n = n + 1
      items[n], ids[n], tokens[n] = false, id, token
    end
    if op == 'ran*' then
      -- Left as they are, unread but for their count: stored together (see below).
      local count = select(2, string.gsub(ARGV[i + 2], '\n', '\n')) + 1
      if not log or count ~= #items - first + 1 then
        return {-2, 'ran* needs a log first, and a run for each line'}
      end
      batch = {first = first, last = #items, lines = ARGV[i + 1], runs = ARGV[i + 2]}
    end
  elseif op == 'log' then
    runs, tally = KEYS[tonumber(ARGV[i + 1]) or 0], KEYS[tonumber(ARGV[i + 2]) or 0]
    if not (runs and tally) or tonumber(ARGV[i + 1]) < 14 or tonumber(ARGV[i + 2]) < 14 then
      return {-2, 'log needs the run history and its tally'}
    end
    local wrong = wrong_type({runs, 'stream', tally, 'string'})
    if wrong then
      return {-1, wrong}
    end
    local why
    log, why = run_log(i + 3)
    if not log then
      return {-2, why}
    end
  elseif op == 'ran' then
    local run = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6],
                 ARGV[i + 7]}
    if #items == 0 or not log then
      return {-2, 'ran must follow a log and an outcome'}
    end
    if not ((run[1] == '' or is_int(run[1])) and is_int(run[2]) and is_digits(run[3])
            and is_int(run[4]) and OUTCOMES[run[5]]) then
      return {-2, 'bad run at ' .. i}
    end
    last_item().ran = run
  elseif op == 'result' then
    local ran = #items > 0 and last_item().ran
    if not ran or ran[8] then
      return {-2, 'result must follow a ran'}
    end
    ran[8] = ARGV[i + 1]
  elseif op == 'file' or op == 'spawn' then
    if #items == 0 then
      return {-2, op .. ' must follow an outcome'}
    end
    if op == 'spawn' and not tonumber(ARGV[i + 2]) then
      return {-2, 'spawn needs a due time'}
    end
    last_item()[op] = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]}
  elseif op == 'finish' then
    local key, window = KEYS[tonumber(ARGV[i + 1]) or 0], tonumber(ARGV[i + 2])
    if #items == 0 or not key or tonumber(ARGV[i + 1]) < 14 or not window or window <= 0 then
      return {-2, 'finish must follow an outcome, with a key and a window'}
    end
    last_item().finish = {key, ARGV[i + 2]}
  else
    local item = {op = op, id = ARGV[i + 1], token = ARGV[i + 2]}
    if op == 'dead' then
      item.record, item.err = ARGV[i + 3], ARGV[i + 4]
    elseif op == 'hold' then
      item.op, item.due, item.hold = 'release', ARGV[i + 3], tonumber(ARGV[i + 4])
      if not tonumber(item.due) or not item.hold then
        return {-2, 'hold needs a due time and a time to hold until'}
      end
    elseif op ~= 'done' then
      item.due, item.record, item.err = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
      if not tonumber(item.due) then
        return {-2, op .. ' needs a due time'}
      end
    end
    local k = #items + 1
    items[k], ids[k], tokens[k] = item, item.id, item.token
  end
  i = i + n + 1
end
if #items == 0 then
  return {}
end

local leases = redis.call('HMGET', lease, unpack(ids))
local moved = redis.call('ZMSCORE', due, unpack(ids))
local kept, ended, cleared, dropped = {}, {}, {}, {}
local n_ended, n_cleared, n_dropped = 0, 0, 0  -- the tables' lengths (`#t` searches)
local hold
for k = 1, #ids do
  local item, id = items[k], ids[k]
  kept[k] = lease_token(leases[k]) == tokens[k] and 1 or 0
  if kept[k] == 1 then
    n_ended = n_ended + 1
    ended[n_ended] = id
    local op = item and item.op or 'done'
    if item and item.hold and (not hold or item.hold > hold) then
      hold = item.hold
    end
    if not moved[k] and (op == 'done' or op == 'next') then
      n_cleared = n_cleared + 1
      cleared[n_cleared] = id
      if op == 'done' then
        n_dropped = n_dropped + 1
        dropped[n_dropped] = id
      end
    end
  end
end

local head = head_score(due)
bulk('ZREM', running, ended)
bulk('HDEL', lease, ended)
if n_cleared > 0 and redis.call('EXISTS', meta) == 1 then
  bulk('HDEL', meta, meta_fields(cleared))
end
bulk('HDEL', data, dropped)
if n_dropped > 0 and redis.call('EXISTS', lane) == 1 then
  bulk('HDEL', lane, dropped)
end
if n_ended > 0 and redis.call('EXISTS', gk.group) == 1 then
  group_ended(gk, ended)
  bulk('HDEL', gk.group, dropped)
end

local earliest
for k = 1, #ids do
  local item = items[k]
  if item and kept[k] == 1 then  -- a plain completion has nothing more to do here
    local id, op = item.id, item.op
    if item.finish then
      redis.call('SET', item.finish[1], now, 'PX', item.finish[2])
    end
    if item.file then
      redis.call('ZADD', dead, now, item.file[1])
      redis.call('HSET', data, item.file[1], item.file[2])
      redis.call('HSET', meta, 'e:' .. item.file[1], item.file[3])
    end
    if item.spawn then
      local spawn_id, spawn_due = item.spawn[1], item.spawn[2]
      lane_add(order, lane, due, {{spawn_id, spawn_due, 0}})
      if group_add(gk, due, {{spawn_id, spawn_due, ''}}) then
        redis.call('HDEL', gk.group, spawn_id)
      end
      redis.call('ZADD', due, spawn_due, spawn_id)
      redis.call('HSET', data, spawn_id, item.spawn[3])
      -- as schedule does: a new occurrence, whatever the id held before
      redis.call('ZREM', dead, spawn_id)
      redis.call('HDEL', meta, 's:' .. spawn_id, 'e:' .. spawn_id)
      if not earliest or tonumber(spawn_due) < tonumber(earliest) then
        earliest = spawn_due
      end
    end
    if op ~= 'done' and not moved[k] and redis.call('HEXISTS', data, id) == 1 then
      if op == 'dead' then
        redis.call('ZADD', dead, now, id)
        redis.call('HSET', data, id, item.record)
        redis.call('HSET', meta, 'e:' .. id, item.err)
      else
        lane_add(order, lane, due, {{id, item.due}})
        group_add(gk, due, {{id, item.due}})
        redis.call('ZADD', due, item.due, id)
        if op ~= 'release' then
          redis.call('HSET', data, id, item.record)
        end
        if op == 'retry' then
          redis.call('HSET', meta, 'e:' .. id, item.err)
        end
        if not earliest or tonumber(item.due) < tonumber(earliest) then
          earliest = item.due
        end
      end
    end
  end
end
wake_if_earlier(ARGV[2], ARGV[3], earliest, head)
if n_ended > 0 and redis.call('EXISTS', gate) == 1 then
  if hold and hold > (tonumber(redis.call('HGET', gate, 'hold') or '') or -math.huge) then
    redis.call('HSET', gate, 'hold', string.format('%d', hold))
  end
  if redis.call('HDEL', gate, 'wait') == 1 then  -- a slot is free: wake the type's workers
    wake_if_earlier(ARGV[2], ARGV[3], now, nil)
  end
elseif hold then
  redis.call('HSET', gate, 'hold', string.format('%d', hold))
end
if log then
  local added = runs_added(runs, tally)
  local before = added
  for k = 1, #ids do
    local item = items[k]
    if item and kept[k] == 1 and item.ran then
      added = add_run(runs, added, item.id, item.ran, log)
    end
  end
  if batch then
    added = add_batch(runs, added, now, batch, kept, log)
  end
  if added > before then
    trim_runs(runs, tally, added, log[2], tonumber(now) - log[3], log[3])
  end
end
if remember > 0 then
  redis.call('SET', call, cmsgpack.pack(kept), 'PX', remember)
end
return kept
