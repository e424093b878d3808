-- abort: mark the run that holds a task's lease to abort, or, when no run holds it, remove
-- the task as cancel.lua does.
--
-- The mark is abort[id] = the lease's token: it belongs to that run, and a later claim of
-- the id (another token) is not marked. Marking publishes "<type> abort" on the wake
-- channel; the worker holding the run finds it with aborting.lua. The task is otherwise
-- left as it is: the run's outcome says what follows. Marks of runs whose lease has ended
-- are dropped here (there are only as many as runs aborted lately). Running it twice
-- gives the same result.
--
-- KEYS[1] due, KEYS[2] data, KEYS[3] dead, KEYS[4] meta, KEYS[5] lease (HASH id ->
-- "<token>|<due ms>"), KEYS[6] abort (HASH id -> token), KEYS[7] order, KEYS[8] lane (the
-- priorities, see _lanes.lua: a task removed leaves both), KEYS[9] group, KEYS[10] groups
-- (see _groups.lua: a task removed leaves its group)
-- ARGV[1] id, ARGV[2] wake channel, ARGV[3] task type (the first word of a wake message)
--
-- Returns {1} when a run was marked, {2} when a task no run holds was removed, {0} when
-- there was no task.
-- Errors: {-1, key} a key holds another type. Nothing is written.
-- include _groups.lua

local due, data, dead, meta, lease, abort = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local bad = wrong_type({due, 'zset', data, 'hash', dead, 'zset', meta, 'hash', lease, 'hash',
                        abort, 'hash', KEYS[7], 'zset', KEYS[8], 'hash', KEYS[9], 'hash',
                        KEYS[10], 'zset'})
if bad then
  return {-1, bad}
end
local id = ARGV[1]
local token = lease_token(redis.call('HGET', lease, id))
if token then
  local marks = redis.call('HGETALL', abort)
  for i = 1, #marks, 2 do
    if lease_token(redis.call('HGET', lease, marks[i])) ~= marks[i + 1] then
      redis.call('HDEL', abort, marks[i])
    end
  end
  redis.call('HSET', abort, id, token)
  publish(ARGV[2], ARGV[3] .. ' abort')
  return {1}
end
group_drop({group = KEYS[9], groups = KEYS[10]}, id, redis.call('ZSCORE', due, id))
local found = redis.call('ZREM', due, id) + redis.call('ZREM', dead, id)
              + redis.call('HDEL', data, id)
redis.call('HDEL', meta, unpack(meta_fields({id})))
redis.call('ZREM', KEYS[7], id)
redis.call('HDEL', KEYS[8], id)
return {found > 0 and 2 or 0}
