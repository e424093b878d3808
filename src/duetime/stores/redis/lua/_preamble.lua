-- Shared preamble: scripts.py puts this text in front of every script.
--
-- A Lua error after a write leaves the earlier writes in place, so every script calls
-- wrong_type() on each of its keys, and checks its arguments, before its first write.
--
-- A running task's lease is one field of the lease hash, id -> "<token>|<due ms>": a task
-- has at most one lease, and a write about a run counts only while its token is there.
-- The meta hash holds, only for tasks that failed or stalled, s:<id> (expired leases of
-- the current occurrence) and e:<id> (the last error).
--
-- Redis keeps a small hash with short values as a listpack, where a bulk HSET costs O(n)
-- per field, against O(1) in a hash table (docs/performance.md). The lease hash churns
-- between empty and a claim batch, so it holds a sentinel field with a long value that
-- keeps it a hash table for good. The value is built by the one script that writes it, not
-- here: building a 1 KB string is a noticeable part of a schedule call.
local SENTINEL = '\0sentinel'
local function sentinel_value()
  return string.rep('-', 1024)
end

-- wrong_type({key1, 'zset', key2, 'hash', ...}): the first key that exists with another
-- type than the one paired with it, or nil when every key is missing or of its type.
local function wrong_type(spec)
  for i = 1, #spec, 2 do
    local t = redis.call('TYPE', spec[i])['ok']
    if t ~= 'none' and t ~= spec[i + 1] then
      return spec[i]
    end
  end
  return nil
end

-- Whether a reply of redis.pcall() is an error (a table with an err field).
local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

-- The token part of a lease value "<token>|<due ms>", or nil.
local function lease_token(value)
  if not value then
    return nil
  end
  return string.match(value, '^(%d+)|')
end

-- The earliest score of a sorted set, as the string Redis stores, or nil when it is empty.
local function head_score(key)
  return redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
end

-- Publish `message` on the wake channel. A channel written "!<name>" is the type's shard
-- channel, in the slot of its keys (Redis Cluster): SPUBLISH reaches the nodes of that slot
-- only, where PUBLISH would reach every node.
local function publish(channel, message)
  if string.byte(channel, 1) == 33 then
    redis.call('SPUBLISH', string.sub(channel, 2), message)
  else
    redis.call('PUBLISH', channel, message)
  end
end

-- Publish "<type> <due ms>" on the wake channel when `due` comes before `head`.
local function wake_if_earlier(channel, task_type, due, head)
  if due and (not head or tonumber(due) < tonumber(head)) then
    publish(channel, task_type .. ' ' .. due)
  end
end

-- The meta fields (stalls, error) of every id in `ids`, for one HDEL.
local function meta_fields(ids)
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = 's:' .. id
    fields[#fields + 1] = 'e:' .. id
  end
  return fields
end

-- Call `command` on `key` with the values of `list` from `from` (default 1) appended, in
-- slices of BULK_SLICE that stay under Lua's limit on unpack() (about 8,000 values). Does
-- nothing for an empty list.
local BULK_SLICE = 4000
local function bulk(command, key, list, from)
  for first = from or 1, #list, BULK_SLICE do
    redis.call(command, key, unpack(list, first, math.min(first + BULK_SLICE - 1, #list)))
  end
end

-- The run history of a type is a stream (keys.py) whose entry ids count runs: an entry that
-- adds n runs after c runs were added in all has the id "<c + n>-0", so that trimming to the
-- newest runs is a range (XTRIM MINID). Its fields, f first:
--   f  a time in ms: a batch's base (the settle's now), a single run's finish
--   k  the most runs the type keeps, as the entry was written (a reader stops there)
--   w  the worker ('' when unknown)
-- and either, for a batch of plain completions (one entry per settle, stored as the settle
-- was given them, so that no line is rewritten):
--   b  their "<token>|<id>" lines, in the order they settled
--   h  their runs, a line for each of b's: "<ms before f it finished>|<ms its handler
--      ran>|<attempt, '' for 1>|<ms before f of its occurrence>"
-- or, for one run:
--   i id, o occurrence ms, a attempt, d ms its handler ran ('' when none did or it is
--   unknown), r outcome, e error, t traceback, v result (what its handler returned, JSON;
--   absent for none)

-- The last id ever added to the stream `runs`, as the count of runs it says were added.
local function last_added(runs)
  local info = redis.call('XINFO', 'STREAM', runs)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      return tonumber(string.match(info[i + 1], '^(%d+)-')) or 0
    end
  end
  return 0
end

-- How many runs were ever added to the stream `runs`: its `tally` (a string), or, should
-- that be gone, the stream's last id (which trimming leaves in place); 0 for neither.
local function runs_added(runs, tally)
  local n = tonumber(redis.call('GET', tally) or '')
  if n then
    return n
  end
  if redis.call('EXISTS', runs) == 0 then
    return 0
  end
  return last_added(runs)
end

-- XADD to `runs` an entry of `count` runs, `fields`, after `added` runs; returns the runs
-- added now. Should the id be taken (a tally behind the stream: changed by something else),
-- the stream's own last id is gone by: a settle never fails on its history.
local function add_entry(runs, added, count, fields)
  local id = string.format('%d-0', added + count)
  if failed(redis.pcall('XADD', runs, id, unpack(fields))) then
    added = last_added(runs)
    redis.call('XADD', runs, string.format('%d-0', added + count), unpack(fields))
  end
  return added + count
end

-- Whether `value` is a string of digits (a count).
local function is_digits(value)
  return type(value) == 'string' and string.match(value, '^%d+$') ~= nil
end

-- Whether `value` is a string of digits after an optional minus (a time in ms).
local function is_int(value)
  return type(value) == 'string' and string.match(value, '^%-?%d+$') ~= nil
end

-- Add the run `run` = {started ('' for none), finished, attempt, occurrence, outcome, error,
-- trace, result (nil for none)} of task `id` to `runs` as an entry of its own, after `added` runs; returns the runs
-- added now. `log` = {worker, keep, max age}.
local function add_run(runs, added, id, run, log)
  local took = ''
  if run[1] ~= '' then
    took = string.format('%d', math.max(0, tonumber(run[2]) - tonumber(run[1])))
  end
  local fields = {'f', run[2], 'k', log[2], 'w', log[1], 'i', id, 'o', run[4], 'a', run[3],
                  'd', took, 'r', run[5], 'e', run[6], 't', run[7]}
  if run[8] then  -- what its handler returned (a settle's result op)
    fields[#fields + 1], fields[#fields + 2] = 'v', run[8]
  end
  return add_entry(runs, added, 1, fields)
end

-- Add the plain completions of `batch` = {first, last, lines, runs} (items first..last of
-- the settle, their lines and runs as ran* gave them) that were `kept`, relative to `base`
-- ms, to `runs` as one entry, after `added` runs; returns the runs added now.
local function add_batch(runs, added, base, batch, kept, log)
  local lines, done = batch.lines, batch.runs
  local count = batch.last - batch.first + 1
  for k = batch.first, batch.last do
    if kept[k] ~= 1 then  -- a stale outcome (rare): the kept ones' lines, one by one
      local kept_lines, kept_runs, runs_of = {}, {}, string.gmatch(done, '[^\n]+')
      local k2 = batch.first
      for line in string.gmatch(lines, '[^\n]+') do
        local run = runs_of()
        if kept[k2] == 1 then
          kept_lines[#kept_lines + 1], kept_runs[#kept_runs + 1] = line, run
        end
        k2 = k2 + 1
      end
      lines, done = table.concat(kept_lines, '\n'), table.concat(kept_runs, '\n')
      count = #kept_lines
      break
    end
  end
  if count == 0 then
    return added
  end
  return add_entry(runs, added, count, {'f', base, 'k', log[2], 'w', log[1], 'b', lines,
                                        'h', done})
end

-- Drop the oldest entries of `runs` while their time (f) is before `cutoff` ms (at most 100
-- a call).
local function trim_aged(runs, cutoff)
  for _ = 1, 100 do
    local first = redis.call('XRANGE', runs, '-', '+', 'COUNT', 1)[1]
    if not first or (tonumber(first[2][2]) or 0) >= cutoff then
      break
    end
    local count = tonumber(string.match(first[1], '^(%d+)-'))
    redis.call('XTRIM', runs, 'MINID', string.format('%d-0', count + 1))
  end
end

-- Note that `added` runs were added to `runs` in all (in `tally`); trim it to its newest
-- `keep` runs (whole entries: the oldest left may hold older runs, which readers skip) and
-- to the entries of `cutoff` ms or later; let both go once nothing was added for `max_age`
-- ms.
local function trim_runs(runs, tally, added, keep, cutoff, max_age)
  redis.call('SET', tally, string.format('%d', added), 'PX', max_age)
  if added - keep + 1 > 0 then
    redis.call('XTRIM', runs, 'MINID', string.format('%d-0', added - keep + 1))
  end
  trim_aged(runs, cutoff)
  redis.call('PEXPIRE', runs, max_age)
end

-- The run history's settings of a call, from ARGV[i..i+2] = worker, keep (>= 1), max age ms
-- (>= 1): {worker, keep, max_age}, or nil and why they cannot be used.
local function run_log(i)
  local worker, keep, max_age = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if not (is_digits(keep) and is_digits(max_age)) or tonumber(keep) < 1
      or tonumber(max_age) < 1 then
    return nil, 'the history needs a keep and a max age of 1 or more'
  end
  return {worker, tonumber(keep), tonumber(max_age)}, nil
end
