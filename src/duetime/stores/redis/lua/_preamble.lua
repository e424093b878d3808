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

-- Publish "<type> <due ms>" on the wake channel when `due` comes before `head`. A channel
-- written "!<name>" is the type's shard channel, in the slot of its keys (Redis Cluster):
-- SPUBLISH reaches the nodes of that slot only, where PUBLISH would reach every node.
local function wake_if_earlier(channel, task_type, due, head)
  if due and (not head or tonumber(due) < tonumber(head)) then
    if string.byte(channel, 1) == 33 then
      redis.call('SPUBLISH', string.sub(channel, 2), task_type .. ' ' .. due)
    else
      redis.call('PUBLISH', channel, task_type .. ' ' .. due)
    end
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

-- The run history of a type is a stream (keys.py), an entry per finished run with the id
-- "<finished ms>-<n>" and the fields i (task id), o (occurrence ms), a (attempt), d (how
-- long its handler ran, ms; '' when none did, or it is unknown), r (outcome), e (error),
-- t (traceback), w (worker). Every entry has every field, so that the stream stores their
-- names once per node.

-- The id of the last entry ever added to the stream `runs` (which trimming leaves in place),
-- as (ms, n); (0, -1) for a stream that does not exist.
local function last_run_id(runs)
  if redis.call('EXISTS', runs) == 0 then
    return 0, -1
  end
  local info = redis.call('XINFO', 'STREAM', runs)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      local ms, n = string.match(info[i + 1], '^(%d+)-(%d+)$')
      return tonumber(ms), tonumber(n)
    end
  end
  return 0, -1
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
-- trace} of task `id` by `worker` to `runs`, after the last id (last_ms, last_n): a run
-- that finished in the same millisecond as the last, or before it (by another worker's
-- clock), takes the next free id. Returns the id used, as (ms, n).
local function add_run(runs, last_ms, last_n, id, run, worker)
  local finished = tonumber(run[2])
  local ms, n = math.max(finished, 0), 0
  if ms <= last_ms then
    ms, n = last_ms, last_n + 1
  end
  if ms == 0 and n == 0 then
    n = 1  -- 0-0 is no stream id
  end
  local took = ''
  if run[1] ~= '' then
    took = string.format('%d', math.max(0, finished - tonumber(run[1])))
  end
  redis.call('XADD', runs, string.format('%d-%d', ms, n), 'i', id, 'o', run[4], 'a', run[3],
             'd', took, 'r', run[5], 'e', run[6], 't', run[7], 'w', worker)
  return ms, n
end

-- Trim `runs` to its newest `keep` entries and to those that finished at or after
-- `cutoff` (ms; none is cut for a cutoff of 0 or less), and let it go as a whole once
-- nothing was added for `max_age` ms.
local function trim_runs(runs, keep, cutoff, max_age)
  redis.call('XTRIM', runs, 'MAXLEN', keep)
  if cutoff > 0 then
    redis.call('XTRIM', runs, 'MINID', string.format('%d', cutoff))
  end
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
