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
