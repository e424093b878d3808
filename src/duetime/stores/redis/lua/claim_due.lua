-- claim_due: reap expired leases, then lease up to `limit` due tasks of one type, as far
-- as its gates allow.
--
-- Reaping: a running task whose lease deadline has passed goes back to due at the due time
-- it was claimed at (so it keeps its occurrence, and a series its phase), and its stall
-- count goes up; past `max stalls` it goes to the dead letters instead.
-- With at-most-once delivery it goes to the dead letters at once, never to run again. A
-- task that was rescheduled or cancelled while it ran just loses its lease.
--
-- Claiming: each claimed task leaves due, enters running scored by its lease deadline,
-- and gets a lease "<token>|<due>" with a fresh fencing token (unique per type,
-- increasing). Claiming an id that still holds a lease (it was rescheduled while it ran)
-- takes the lease over: the earlier run's outcome will be stale. A due id without a
-- record is moved to the dead letters with a reason, never dropped.
--
-- Priorities (see _lanes.lua): a type with an `order` ZSET is claimed from it, highest
-- priority first, then earliest due; any other from due, earliest first. A task sent back
-- to due by reaping keeps its priority (and its group).
--
-- Groups (see _groups.lua): a claim with group limits (ARGV[11..13]) of a type that keeps
-- groups is claimed from them instead, group by group in turn, each group's tasks earliest
-- due first (priorities are not applied), as far as each group's limits allow. When due
-- work is left only in groups at their limits, `next` is the earliest lease deadline (and
-- the earliest due time after the horizon), `open` when the first group held by its rate
-- opens, and a group at its concurrency sets `wait` in the gate hash, as the type's own
-- global concurrency does.
--
-- Gates (see _gate.lua): a paused or held type starts nothing; a rate (`interval`, `burst`)
-- and a global concurrency (`max running`, counted after reaping) cap the tasks claimed.
-- Tasks held back stay due. A claim that leaves the type at its global concurrency sets
-- `wait` in the gate hash. A type without a gate hash and without limits skips all of it.
--
-- Resending it is safe: the reply of a call that claimed tasks is kept for a short while
-- under the call's own key, and a call with that key again returns it, instead of claiming
-- other tasks while the first ones wait out their lease.
--
-- KEYS[1] due (ZSET id -> due ms, to the microsecond), KEYS[2] running (ZSET id -> lease deadline ms),
-- KEYS[3] data, KEYS[4] lease (HASH id -> "<token>|<due ms>"), KEYS[5] meta, KEYS[6] dead,
-- KEYS[7] seq (STRING: the last token given out), KEYS[8] this call's key,
-- KEYS[9] gate (HASH: the type's gates), KEYS[10] order (ZSET: the due tasks by priority)
-- and KEYS[11] lane (HASH id -> priority): see _lanes.lua; KEYS[12] group (HASH id ->
-- group), KEYS[13] groups (ZSET), KEYS[14] ready (ZSET) and KEYS[15] pace (ZSET): see
-- _groups.lua; KEYS[16] the run history and KEYS[17] its tally (optional: with them, an
-- expired lease sent back to due or to the dead letters is recorded as a failed or dead
-- run, and a claim that finds nothing due drops the runs that aged out)
-- ARGV[1] now ms, ARGV[2] limit (>= 0), ARGV[3] lease ms (> 0), ARGV[4] max stalls (>= 0),
-- ARGV[5] "1" for at-most-once delivery, else "0"
-- ARGV[6] look-ahead ms (>= 0): also claim tasks due this soon; the worker starts each at
--         its due time (the lease counts from now)
-- ARGV[7] how long to keep the reply for a resent call, ms
-- The gates, optional (ARGV[8..13] all, or none of them: no gate):
-- ARGV[8] the rate's interval between starts, ms (0: no rate), ARGV[9] its burst (optional)
-- ARGV[10] most tasks running at once (0: no limit; optional)
-- ARGV[11] each group's rate's interval, ms (0: none), ARGV[12] its burst (optional)
-- ARGV[13] most tasks of one group running at once (0: no limit; optional)
-- ARGV[14..16] with KEYS[16]: the claiming worker (unused: a reaped run's worker is
--         unknown), the most runs kept, their most age (ms): see run_log in the preamble
--
-- Returns {next, reaped, open, id1, token1, stalls1, due1, record1, lead1, id2, ...}, where
-- due is the whole ms rounded up (as the lease holds it) and lead the microseconds before it
-- that the task is due (0 to 999: a score may hold a due time to the microsecond):
--   next   the earliest lease deadline left, and the earliest due time unless a gate
--          holds due tasks back, as a string ('' when none);
--   reaped the number of expired leases handled;
--   open   when a gate holding due tasks back opens by time (a rate, a hold), ms ('' when
--          none: not held, or paused, or at its global concurrency).
-- Errors: {-1, key} a key holds another type; {-2, what} bad arguments, or a token counter
-- that is not a number. Nothing is written.
-- include _gate.lua _lanes.lua _groups.lua

local due, running, data, lease = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local meta, dead, seq, call, gate = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local order, lane, runs, tally = KEYS[10], KEYS[11], KEYS[16], KEYS[17]
local gk = {group = KEYS[12], groups = KEYS[13], ready = KEYS[14], pace = KEYS[15]}
local bad = wrong_type({due, 'zset', running, 'zset', data, 'hash', lease, 'hash',
                        meta, 'hash', dead, 'zset', seq, 'string', call, 'string',
                        order, 'zset', lane, 'hash'})
       or (runs and wrong_type({runs, 'stream', tally or '', 'string'}))
if bad then
  return {-1, bad}
end
-- Its type tells whether the type has gates set: the one read an ungated type pays.
local gate_kind = redis.call('TYPE', gate)['ok']
if gate_kind ~= 'none' and gate_kind ~= 'hash' then
  return {-1, gate}
end
local replay = redis.call('GET', call)
if replay then
  return cmsgpack.unpack(replay)  -- this call was sent before and its reply lost
end
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local lease_ms, max_stalls = tonumber(ARGV[3]), tonumber(ARGV[4])
local at_most_once = ARGV[5] == '1'
local horizon = now and tonumber(ARGV[6] or '0') and now + tonumber(ARGV[6] or '0')
local interval, burst = tonumber(ARGV[8] or '0'), tonumber(ARGV[9] or '1')
local max_running = tonumber(ARGV[10] or '0')
local limits = {interval = tonumber(ARGV[11] or '0'), burst = tonumber(ARGV[12] or '1'),
                most = tonumber(ARGV[13] or '0')}
if not (now and limit and lease_ms and max_stalls and horizon) or limit < 0
    or lease_ms <= 0 or horizon < now then
  return {-2, 'now, limit, lease and max stalls must be numbers'}
end
if not (interval and burst and max_running) or interval < 0 or burst < 1
    or max_running < 0 or not (limits.interval and limits.burst and limits.most)
    or limits.interval < 0 or limits.burst < 1 or limits.most < 0 then
  return {-2, 'the rate and the most running must be numbers, the burst 1 or more'}
end
local grouped = limits.interval > 0 or limits.most > 0
-- The group keys are checked only by the claims that use them (with group limits, or
-- reaping), so that a type without groups reads nothing more.
local GROUP_KEYS = {gk.group, 'hash', gk.groups, 'zset', gk.ready, 'zset', gk.pace, 'zset'}
if grouped and wrong_type(GROUP_KEYS) then
  return {-1, wrong_type(GROUP_KEYS)}
end
local gated = gate_kind == 'hash' or interval > 0 or max_running > 0
-- The token counter is checked before any write: INCRBY on a value that is not a number
-- would fail after the claimed tasks left due.
local last_token = redis.call('GET', seq)
if last_token and not string.match(last_token, '^%d+$') then
  return {-2, 'the token counter ' .. seq .. ' holds something other than a number'}
end
local log
if runs then
  if not tally then
    return {-2, 'the run history needs its tally'}
  end
  local why
  log, why = run_log(14)
  if not log then
    return {-2, why}
  end
end

-- The run of `id` whose lease expired, for the history: {'' (its start is unknown), now,
-- attempt, occurrence, outcome, error, ''}, from its record's failures ("f") and occurrence
-- ("o") and `stalls`, the expired leases before this one.
local function crashed_run(id, claimed_due, stalls, outcome, err)
  local ok, doc = pcall(cjson.decode, redis.call('HGET', data, id) or '')
  if not ok or type(doc) ~= 'table' then
    doc = {}
  end
  local failures = tonumber(doc.f) or 0
  local occurrence = tonumber(doc.o) and string.format('%d', doc.o) or claimed_due
  local attempt = string.format('%d', failures + stalls + 1)
  return {'', ARGV[1], attempt, occurrence, outcome, err, ''}
end
local crashed = {}

-- Reap at most this many expired leases per call, so one call stays short.
local REAP_BATCH = 1000
local expired = redis.call('ZRANGEBYSCORE', running, '-inf', ARGV[1], 'LIMIT', 0, REAP_BATCH)
if #expired > 0 and not grouped and wrong_type(GROUP_KEYS) then
  return {-1, wrong_type(GROUP_KEYS)}
end
for _, id in ipairs(expired) do
  local claimed_due = string.match(redis.call('HGET', lease, id) or '', '|(%d+)$') or ARGV[1]
  redis.call('ZREM', running, id)
  redis.call('HDEL', lease, id)
  if redis.call('ZSCORE', due, id) or redis.call('HEXISTS', data, id) == 0 then
    -- rescheduled or cancelled while it ran: the lease just ends
  elseif at_most_once then
    local why = 'lease expired; not run again (at-most-once delivery)'
    if log then
      local before = tonumber(redis.call('HGET', meta, 's:' .. id) or '0') or 0
      crashed[#crashed + 1] = {id, crashed_run(id, claimed_due, before, 'dead', why)}
    end
    redis.call('ZADD', dead, ARGV[1], id)
    redis.call('HSET', meta, 'e:' .. id, why)
  else
    -- A stall count that is not a number (written by something else) starts again at 1.
    local stalls = redis.pcall('HINCRBY', meta, 's:' .. id, 1)
    if failed(stalls) then
      stalls = 1
      redis.call('HSET', meta, 's:' .. id, stalls)
    end
    local outcome, why = 'failed', 'lease expired (its worker stopped or hung)'
    if stalls > max_stalls then
      outcome, why = 'dead', 'stalled: its lease expired ' .. stalls .. ' times'
      redis.call('ZADD', dead, ARGV[1], id)
      redis.call('HSET', meta, 'e:' .. id, why)
    else
      lane_add(order, lane, due, {{id, claimed_due}})
      group_add(gk, due, {{id, claimed_due}})
      redis.call('ZADD', due, claimed_due, id)
    end
    if log then
      crashed[#crashed + 1] = {id, crashed_run(id, claimed_due, stalls - 1, outcome, why)}
    end
  end
end
if #crashed > 0 then
  local added = runs_added(runs, tally)
  log[1] = ''  -- a crashed run's worker is unknown
  for _, run in ipairs(crashed) do
    added = add_run(runs, added, run[1], run[2], log)
  end
  trim_runs(runs, tally, added, log[2], now - log[3], log[3])
end

local out = {'', #expired, ''}
local state
local allowed = limit
if gated then
  state = gate_read(gate)
  if max_running > 0 then
    state.running = redis.call('ZCARD', running)
  end
  allowed = gate_allowance(state, now, limit, interval, burst, max_running)
end
local ids, dues = {}, {}
local picked_groups
-- Whether the picked ids are the head of due (its first #ids by rank): they then leave it
-- by rank, without a look-up of each.
local from_head = false
if allowed > 0 and grouped and redis.call('EXISTS', gk.groups) == 1 then
  picked_groups = group_claim(gk, due, running, now, horizon, allowed, limits)
  ids, dues = picked_groups.ids, picked_groups.dues
elseif allowed > 0 and redis.call('EXISTS', order) == 1 then
  ids, dues = lane_pick(order, due, horizon, allowed)
elseif allowed > 0 then
  local picked = redis.call('ZRANGEBYSCORE', due, '-inf', string.format('%d', horizon),
                            'WITHSCORES', 'LIMIT', 0, allowed)
  local n = 0
  for i = 1, #picked, 2 do
    n = n + 1
    ids[n], dues[n] = picked[i], picked[i + 1]
  end
  from_head = true
end
local started = 0
if #ids > 0 then
  local records = redis.call('HMGET', data, unpack(ids))
  -- Stall counts exist only for tasks that stalled: usually there is no meta hash at all.
  local stalls = {}
  if redis.call('EXISTS', meta) == 1 then
    local fields = {}
    for k, id in ipairs(ids) do
      fields[k] = 's:' .. id
    end
    stalls = redis.call('HMGET', meta, unpack(fields))
  end
  if from_head then
    redis.call('ZREMRANGEBYRANK', due, 0, #ids - 1)
  else
    bulk('ZREM', due, ids)
  end
  local good, started_ids, started_groups = {}, {}, {}
  for i, id in ipairs(ids) do
    if records[i] then
      good[#good + 1] = i
      if picked_groups and limits.most > 0 then
        started_ids[#started_ids + 1] = id
        started_groups[#started_groups + 1] = picked_groups.groups[i]
      end
    else
      redis.call('ZADD', dead, ARGV[1], id)
      redis.call('HSET', meta, 'e:' .. id, 'no record for this id: moved aside')
    end
  end
  if #good > 0 then
    local last = redis.call('INCRBY', seq, #good)
    local deadline = string.format('%d', now + lease_ms)
    local zadd, hset = {}, {SENTINEL, sentinel_value()}
    local z, h, o = 0, 2, #out  -- the tables' lengths: `#t` costs a search in Lua 5.1
    for k, i in ipairs(good) do
      local id, token = ids[i], last - #good + k
      -- A due time to the microsecond: the whole ms rounded up, and the microseconds
      -- before it (the score holds them to within a quarter of one: rounded back exactly).
      local at = tonumber(dues[i])
      local ms = math.ceil(at)
      local whole = ms == at and dues[i] or string.format('%d', ms)
      zadd[z + 1], zadd[z + 2] = deadline, id
      hset[h + 1], hset[h + 2] = id, token .. '|' .. whole
      out[o + 1], out[o + 2] = id, token
      out[o + 3] = tonumber(stalls[i] or '0') or 0  -- not a number: none counted
      out[o + 4], out[o + 5] = whole, records[i]
      out[o + 6] = math.floor((ms - at) * 1000 + 0.5)
      z, h, o = z + 2, h + 2, o + 6
    end
    bulk('ZADD', running, zadd)
    bulk('HSET', lease, hset)
    group_started(gk, started_ids, started_groups)
    started = #good
  end
end
local remember = #out > 3 and tonumber(ARGV[7] or '0') or 0

if gated then
  if started > 0 then
    state.running = state.running + started
    if interval > 0 then
      state.tat = math.max(state.tat or now, now) + started * interval
      redis.call('HSET', gate, 'tat', string.format('%.6f', state.tat))
    end
  end
  if max_running > 0 and state.running >= max_running then
    redis.call('HSET', gate, 'wait', '1')
  end
  if state.hold and state.hold <= now then  -- over: the gate costs nothing once empty
    redis.call('HDEL', gate, 'hold')
    state.hold = nil
  end
end
if log and #out == 3 and #crashed == 0 then
  -- Nothing claimed: the runs that aged out while nothing was added go, as a worker looks
  -- for work (a claim that finds work leaves it to the settles).
  trim_aged(runs, now - log[3])
end

local next_due, next_lease = head_score(due), head_score(running)
local held_back = gated and #ids < limit and next_due and tonumber(next_due) <= horizon
    and gate_allowance(state, now, 1, interval, burst, max_running) == 0
if held_back then
  out[1] = next_lease or ''
  local opens = gate_opens(state, now, interval, burst)
  out[3] = opens and string.format('%d', opens) or ''
elseif picked_groups and not picked_groups.unheld
    and (picked_groups.full or picked_groups.opens) then
  -- Due work is left only in groups held by their limits: look again when a lease ends
  -- (or a settle wakes the workers), a group's rate opens, or a later task comes due.
  local at = redis.call('ZRANGEBYSCORE', gk.ready, string.format('(%d', horizon), '+inf',
                        'WITHSCORES', 'LIMIT', 0, 1)[2]
  if next_lease and (not at or tonumber(next_lease) < tonumber(at)) then
    at = next_lease
  end
  out[1] = at or ''
  out[3] = picked_groups.opens and string.format('%d', picked_groups.opens) or ''
  if picked_groups.full then
    redis.call('HSET', gate, 'wait', '1')
  end
elseif next_due and next_lease then
  out[1] = tonumber(next_due) <= tonumber(next_lease) and next_due or next_lease
else
  out[1] = next_due or next_lease or ''
end
if remember > 0 then
  -- MessagePack: a claim's records are packed several times faster than as JSON.
  redis.call('SET', call, cmsgpack.pack(out), 'PX', remember)
end
return out
