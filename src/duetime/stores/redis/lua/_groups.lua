-- Shared group functions: scripts.py puts this text after the preamble (and _gate.lua,
-- _lanes.lua) of the scripts that add due tasks or claim them (schedule, schedule_if,
-- claim_due, settle, revive, hasten, put_entry, schedule_event).
--
-- The due ZSET stays the truth about what is due and when. A type that ever had a task of
-- a group also keeps (gk, a table of the keys, in the scripts):
--   group   HASH  id -> group, for its tasks of a group (due, running or dead: a retry, the
--                 next occurrence and a revive keep it)
--   groups  ZSET  all scores 0, so ordered by member:
--                 "<len>:<group>|<due>|<id>" for every due task while it exists (group ""
--                   for a task without one; <due> fixed-width hex, so a group's tasks are
--                   one ZRANGEBYLEX range in due order, and a claim reads its head only);
--                 "r|<len>:<group>|<id>" for each task of a group a grouped claim started:
--                   counted (ZLEXCOUNT) as the group's running tasks; the settle that ends
--                   the run removes it, and the count is checked against the running ZSET
--                   when it reaches the group's limit (entries of runs whose lease lapsed,
--                   or cancelled, or moved to another group, are dropped there: no drift)
--   ready   ZSET  group -> its ready time: the earliest due time of its tasks, or, once a
--                 claim visited it, max(that, the claim's now), so that groups waiting
--                 longer come first (turns); never later than its earliest due task
--   pace    ZSET  group -> its rate's GCRA time (tat), while that is after now
-- `groups` is made from the due ZSET by the first write of a task of a group (every task
-- in it then goes to group "": none had a group before), a scan of the due tasks, once.
-- While neither `groups` nor `group` exists, a write costs one EXISTS and a claim without
-- group limits nothing. An entry of a task that left due, moved or changed group is stale:
-- the grouped claim that meets it drops it (a claim without group limits leaves its
-- entries so).
local GROUP_OFFSET = 4503599627370496  -- 2^52: due times of -2^52 to 2^52 ms order exactly
local GROUP_TOP = 9007199254740991     -- 2^53 - 1, 14 hex digits
local GROUP_HEX = 14
-- Groups visited per claim beyond its allowance, so that a few groups at their limit do not
-- keep the claim from the others; the cost of a claim stays bounded.
local GROUP_VISITS = 16
-- Stale entries a claim drops at most (then it says there may be more due work).
local GROUP_STALE = 2000

local function group_prefix(group)
  return string.len(group) .. ':' .. group .. '|'
end

-- The entry in `groups` of task `id` of `group`, due at `due` ms (the whole ms rounded up:
-- a score may hold microseconds).
local function group_entry(group, due, id)
  local at = math.min(math.max(math.ceil(tonumber(due)) + GROUP_OFFSET, 0), GROUP_TOP)
  return group_prefix(group) .. string.format('%014x', at) .. '|' .. id
end

-- The lexicographic range of a prefix, for ZRANGEBYLEX and ZLEXCOUNT.
local function lex_range(prefix)
  return '[' .. prefix, '[' .. prefix .. '\255'
end

-- Build `groups` and `ready` from the due ZSET (its tasks all in group ""), in slices.
local function group_build(gk, due)
  local SLICE = 2000
  local start = 0
  while true do
    local page = redis.call('ZRANGE', due, start, start + SLICE - 1, 'WITHSCORES')
    if #page == 0 then
      break
    end
    local zadd = {}
    for k = 1, #page, 2 do
      zadd[#zadd + 1] = 0
      zadd[#zadd + 1] = group_entry('', page[k + 1], page[k])
    end
    bulk('ZADD', gk.groups, zadd)
    if start == 0 then
      redis.call('ZADD', gk.ready, 'LT', page[2], '')
    end
    start = start + SLICE
  end
end

-- Note the due entries just written or about to be, `items` = {{id, due, group}, ...}
-- (group nil: the one `group` holds), in `groups` and `ready`: made first when an item has
-- a group and neither exists; nothing at all while neither exists and no item has a group.
-- Call it before the items are added to due. Returns whether the type keeps groups.
local function group_add(gk, due, items)
  local on = redis.call('EXISTS', gk.groups, gk.group) > 0
  if not on then
    local any = false
    for _, item in ipairs(items) do
      if item[3] and item[3] ~= '' then
        any = true
        break
      end
    end
    if not any then
      return false
    end
    group_build(gk, due)
  end
  local unknown = {}
  for _, item in ipairs(items) do
    if item[3] == nil then
      unknown[#unknown + 1] = item[1]
    end
  end
  local found, u = {}, 0
  if #unknown > 0 then
    for first = 1, #unknown, BULK_SLICE do
      local part = redis.call('HMGET', gk.group,
                              unpack(unknown, first, math.min(first + BULK_SLICE - 1, #unknown)))
      for _, g in ipairs(part) do
        found[#found + 1] = g or ''
      end
    end
  end
  local zadd, firsts = {}, {}
  for _, item in ipairs(items) do
    local g = item[3]
    if g == nil then
      u = u + 1
      g = found[u]
    end
    zadd[#zadd + 1] = 0
    zadd[#zadd + 1] = group_entry(g, item[2], item[1])
    local at = tonumber(item[2])
    if not firsts[g] or at < firsts[g] then
      firsts[g] = at
    end
  end
  bulk('ZADD', gk.groups, zadd)
  local ready = {}
  for g, at in pairs(firsts) do
    ready[#ready + 1] = string.format('%d', at)
    ready[#ready + 1] = g
  end
  for first = 1, #ready, BULK_SLICE do
    redis.call('ZADD', gk.ready, 'LT', unpack(ready, first, math.min(first + BULK_SLICE - 1,
                                                                       #ready)))
  end
  return true
end

-- Keep the groups of newly written tasks `items` = {{id, due, group}, ...} in `group` (a
-- task of no group leaves it). `on`: what group_add returned.
local function group_keep(gk, items, on)
  if not on then
    return
  end
  local hset, hdel = {}, {}
  for _, item in ipairs(items) do
    if item[3] ~= '' then
      hset[#hset + 1] = item[1]
      hset[#hset + 1] = item[3]
    else
      hdel[#hdel + 1] = item[1]
    end
  end
  bulk('HSET', gk.group, hset)
  bulk('HDEL', gk.group, hdel)
end

-- Take task `id` (due at `due` ms, or not due: nil) out of its group: its entry and its
-- group go (cancel).
local function group_drop(gk, id, due)
  local g = redis.call('HGET', gk.group, id)
  if due then
    redis.call('ZREM', gk.groups, group_entry(g or '', due, id))
  end
  if g then
    redis.call('HDEL', gk.group, id)
  end
end

-- The runs of tasks `ids` ended: their "r|" entries go (settle; a type that keeps a group
-- hash only).
local function group_ended(gk, ids)
  local zrem = {}
  for first = 1, #ids, BULK_SLICE do
    local last = math.min(first + BULK_SLICE - 1, #ids)
    local owners = redis.call('HMGET', gk.group, unpack(ids, first, last))
    for k = first, last do
      local g = owners[k - first + 1]
      if g then
        zrem[#zrem + 1] = 'r|' .. group_prefix(g) .. ids[k]
      end
    end
  end
  bulk('ZREM', gk.groups, zrem)
end

-- How many tasks of `group` run, by its "r|" entries; when that reaches `most`, each is
-- checked against `running` (a lease after `now`) and `group`, and those that fail go.
local function group_running(gk, running, group, now, most)
  local prefix = 'r|' .. group_prefix(group)
  local lo, hi = lex_range(prefix)
  local n = redis.call('ZLEXCOUNT', gk.groups, lo, hi)
  if n < most then
    return n
  end
  local members = redis.call('ZRANGEBYLEX', gk.groups, lo, hi)
  local stale = {}
  n = 0
  for first = 1, #members, BULK_SLICE do
    local last = math.min(first + BULK_SLICE - 1, #members)
    local ids = {}
    for k = first, last do
      ids[#ids + 1] = string.sub(members[k], #prefix + 1)
    end
    local deadlines = redis.call('ZMSCORE', running, unpack(ids))
    local owners = redis.call('HMGET', gk.group, unpack(ids))
    for k = 1, #ids do
      if deadlines[k] and tonumber(deadlines[k]) > now and owners[k] == group then
        n = n + 1
      else
        stale[#stale + 1] = members[first + k - 1]
      end
    end
  end
  bulk('ZREM', gk.groups, stale)
  return n
end

-- Up to `want` tasks of `group` due by `horizon`, earliest due first: {ids, dues}, the due
-- time of the group's first entry left (nil: none left; an estimate: it may be stale), and
-- the stale budget left (below 1: it ran out, and there may be more). The tasks taken and
-- the stale entries met leave `groups`; the caller takes the tasks out of due.
local function group_take(gk, due, group, want, horizon, budget)
  local prefix = group_prefix(group)
  local lo, hi = lex_range(prefix)
  local from = #prefix + 1
  local ids, dues = {}, {}
  while budget > 0 do
    local ask = want - #ids + 1
    local page = redis.call('ZRANGEBYLEX', gk.groups, lo, hi, 'LIMIT', 0, ask)
    if #page == 0 then
      return ids, dues, nil, budget
    end
    local pids, pdues = {}, {}
    for k, entry in ipairs(page) do
      pdues[k] = tonumber(string.sub(entry, from, from + GROUP_HEX - 1), 16) - GROUP_OFFSET
      pids[k] = string.sub(entry, from + GROUP_HEX + 1)
    end
    local scores = redis.call('ZMSCORE', due, unpack(pids))
    local owners = redis.call('HMGET', gk.group, unpack(pids))
    local gone, nxt = {}, nil
    for k, entry in ipairs(page) do
      if pdues[k] > horizon then
        nxt = pdues[k]
        break
      end
      local fresh = scores[k] and math.ceil(tonumber(scores[k])) == pdues[k]
      if not (fresh and (owners[k] or '') == group) then
        gone[#gone + 1] = entry  -- stale
        budget = budget - 1
      elseif #ids < want then
        ids[#ids + 1] = pids[k]
        dues[#dues + 1] = scores[k]
        gone[#gone + 1] = entry
      else
        nxt = pdues[k]
        break
      end
    end
    bulk('ZREM', gk.groups, gone)
    if nxt then
      return ids, dues, nxt, budget
    end
    if #page < ask then
      return ids, dues, nil, budget
    end
  end
  return ids, dues, nil, budget
end

-- A claim of up to `allowed` tasks due by `horizon` from the type's groups, which have
-- limits `limits` = {interval, burst, most} each (see _gate.lua; group "" has none). The
-- groups with due work are visited by ready time, at most allowed + GROUP_VISITS of them,
-- each giving at most its share (allowed over the groups visited) and what its limits
-- allow. Returns {ids, dues, groups (of each id), unheld (due work is left that no group
-- limit holds), full (a group at its concurrency holds due work), opens (the earliest time
-- a group held by its rate opens, or nil)}.
local function group_claim(gk, due, running, now, horizon, allowed, limits)
  local out = {ids = {}, dues = {}, groups = {}, unheld = false, full = false}
  if limits.interval > 0 then
    redis.call('ZREMRANGEBYSCORE', gk.pace, '-inf', now)  -- past: as good as none
  end
  local cap = allowed + GROUP_VISITS
  local found = redis.call('ZRANGEBYSCORE', gk.ready, '-inf', string.format('%d', horizon),
                           'LIMIT', 0, cap + 1)
  local visits = math.min(#found, cap)
  local share = visits > 0 and math.ceil(allowed / visits) or 0
  local budget = GROUP_STALE
  for v = 1, visits do
    local group = found[v]
    local room = allowed - #out.ids
    if room <= 0 or budget <= 0 then
      out.unheld = true  -- the rest wait for the next claim, first in line
      break
    end
    local want = math.min(share, room)
    local n, state = want, nil
    if group ~= '' then
      state = {running = 0}
      if limits.interval > 0 then
        state.tat = tonumber(redis.call('ZSCORE', gk.pace, group) or '')
      end
      if limits.most > 0 then
        state.running = group_running(gk, running, group, now, limits.most)
      end
      n = gate_allowance(state, now, want, limits.interval, limits.burst, limits.most)
    end
    local ids, dues, nxt
    ids, dues, nxt, budget = group_take(gk, due, group, n, horizon, budget)
    for k, id in ipairs(ids) do
      out.ids[#out.ids + 1] = id
      out.dues[#out.dues + 1] = dues[k]
      out.groups[#out.groups + 1] = group
    end
    if state and #ids > 0 then
      state.running = state.running + #ids
      if limits.interval > 0 then
        state.tat = math.max(state.tat or now, now) + #ids * limits.interval
        redis.call('ZADD', gk.pace, string.format('%.6f', state.tat), group)
      end
    end
    if budget <= 0 then
      out.unheld = true
    elseif nxt then
      redis.call('ZADD', gk.ready, string.format('%d', math.max(nxt, now)), group)
    else
      redis.call('ZREM', gk.ready, group)
    end
    if budget > 0 and nxt and nxt <= horizon then  -- due work left in the group
      if state and limits.most > 0 and state.running >= limits.most then
        out.full = true
      elseif state and gate_allowance(state, now, 1, limits.interval, limits.burst, 0) == 0 then
        local opens = gate_opens(state, now, limits.interval, limits.burst)
        if opens then
          out.opens = math.min(out.opens or opens, opens)
        else
          out.unheld = true
        end
      else
        out.unheld = true  -- its share was taken: more next time
      end
    end
  end
  if #found > cap and (#out.ids > 0 or not (out.full or out.opens)) then
    -- Groups not visited may hold due work. A claim that took nothing and found only
    -- groups at their limit says so (the settles of their runs wake the workers), not to
    -- spin through groups that are all held.
    out.unheld = true
  end
  return out
end

-- Note the runs of tasks `ids` of `groups` (by index) a grouped claim started, as "r|"
-- entries of their groups (none for group "").
local function group_started(gk, ids, groups)
  local zadd = {}
  for k, id in ipairs(ids) do
    if groups[k] ~= '' then
      zadd[#zadd + 1] = 0
      zadd[#zadd + 1] = 'r|' .. group_prefix(groups[k]) .. id
    end
  end
  bulk('ZADD', gk.groups, zadd)
end
