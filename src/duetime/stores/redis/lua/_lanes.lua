-- Shared priority functions: scripts.py puts this text after the preamble of the scripts
-- that add due tasks or claim them (schedule, schedule_if, claim_due, settle, revive,
-- hasten, inspect_task).
--
-- The due ZSET stays the truth about what is due and when, for every task: listings,
-- counts, cancel, hasten and the next due time read it alone. A type that ever had a task
-- of a priority other than 0 also keeps:
--   lane   HASH  id -> priority, for its tasks of a priority other than 0 (due, running or
--                dead: a retry, the next occurrence and a revive keep it)
--   order  ZSET  id -> lane_score(priority, due): every due task while it exists, by
--                priority (highest first) then due time, in one sorted set
-- `order` is made, from the due ZSET, by the first write of a task of a priority other
-- than 0 (a scan of the due tasks then, once); every write to due adds to it while it
-- exists. A type whose `order` does not exist is claimed from due as it always was: the
-- cost of priorities to it is an EXISTS per claim and per write to due.
-- A task that leaves due without leaving `order` (cancelled, say) is a stale entry there:
-- the claim that meets it drops it (a task is in `order` only while it is in due).
--
-- One sorted set serves every level, so that a script touches only the keys it is given:
-- a level is a band of LANE_BASE scores, (100 - priority) * LANE_BASE, and a task's due
-- time is kept in its band offset by LANE_OFFSET, exact for due times within 2^44 ms of
-- the epoch (the years 1412 to 2527; beyond, the order within a level is by the nearest
-- end of that range). 201 bands of 2^45 stay below 2^53: every score is an exact integer.
local LANE_BASE = 35184372088832    -- 2^45
local LANE_OFFSET = 17592186044416  -- 2^44

-- The score in `order` of a task of `priority` due at `due` ms.
local function lane_score(priority, due)
  local at = math.min(math.max(tonumber(due) + LANE_OFFSET, 0), LANE_BASE - 1)
  return string.format('%d', (100 - priority) * LANE_BASE + at)
end

-- The priority of `id` as `lane` holds it (0 when it holds none).
local function lane_of(lane, id)
  return tonumber(redis.call('HGET', lane, id) or '0') or 0
end

-- Build `order` from the due ZSET (its tasks are all of priority 0: any other was added
-- to `order` as it was written), in slices.
local function lane_build(order, due)
  local SLICE = 2000
  local start = 0
  while true do
    local page = redis.call('ZRANGE', due, start, start + SLICE - 1, 'WITHSCORES')
    if #page == 0 then
      break
    end
    local zadd = {}
    for k = 1, #page, 2 do
      zadd[#zadd + 1] = lane_score(0, page[k + 1])
      zadd[#zadd + 1] = page[k]
    end
    bulk('ZADD', order, zadd)
    start = start + SLICE
  end
end

-- Note the due entries just written or about to be, `items` = {{id, due, priority}, ...}
-- (priority nil: the one `lane` holds), in `order`: made first when an item has a priority
-- other than 0 and it does not exist; nothing at all while it does not exist and every
-- item is of priority 0. Call it before the items are added to due, so that a build of
-- `order` does not need them.
local function lane_add(order, lane, due, items)
  local on = redis.call('EXISTS', order) == 1
  local has_lane = redis.call('EXISTS', lane) == 1
  if not on and not has_lane then
    local any = false
    for _, item in ipairs(items) do
      if item[3] and item[3] ~= 0 then
        any = true
        break
      end
    end
    if not any then
      return
    end
  end
  local zadd = {}
  for _, item in ipairs(items) do
    local priority = item[3]
    if priority == nil then
      priority = has_lane and lane_of(lane, item[1]) or 0
    end
    if priority ~= 0 and not on then
      lane_build(order, due)
      on = true
    end
    zadd[#zadd + 1] = lane_score(priority, item[2])
    zadd[#zadd + 1] = item[1]
  end
  if on then
    bulk('ZADD', order, zadd)
  end
end

-- Keep the priorities of newly written tasks `items` = {{id, due, priority}, ...} in `lane`.
local function lane_keep(lane, items)
  local hset, hdel = {}, {}
  for _, item in ipairs(items) do
    if item[3] ~= 0 then
      hset[#hset + 1] = item[1]
      hset[#hset + 1] = string.format('%d', item[3])
    else
      hdel[#hdel + 1] = item[1]
    end
  end
  bulk('HSET', lane, hset)
  if #hdel > 0 and redis.call('EXISTS', lane) == 1 then
    bulk('HDEL', lane, hdel)
  end
end

-- Up to `limit` tasks due by `horizon` from `order`, highest priority first, then earliest
-- due: {ids, dues}. Each level present costs a seek (the first entry at or past its band),
-- whatever its backlog; the tasks taken (and the stale entries met) leave `order`, and the
-- caller takes the tasks out of due.
local function lane_pick(order, due, horizon, limit)
  local ids, dues = {}, {}
  local from = '-inf'
  local at = math.min(math.max(horizon + LANE_OFFSET, 0), LANE_BASE - 1)
  while #ids < limit do
    local first = redis.call('ZRANGEBYSCORE', order, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if #first == 0 then
      break
    end
    local band = math.floor(tonumber(first[2]) / LANE_BASE) * LANE_BASE
    local top = string.format('%d', band + at)
    while #ids < limit do
      local want = limit - #ids
      local got = redis.call('ZRANGEBYSCORE', order, string.format('%d', band), top,
                             'LIMIT', 0, want)
      if #got == 0 then
        break
      end
      local scores = redis.call('ZMSCORE', due, unpack(got))
      for k, id in ipairs(got) do
        if scores[k] then
          ids[#ids + 1] = id
          dues[#dues + 1] = scores[k]
        end
      end
      bulk('ZREM', order, got)
      if #got < want then
        break
      end
    end
    from = string.format('%d', band + LANE_BASE)
  end
  return ids, dues
end
