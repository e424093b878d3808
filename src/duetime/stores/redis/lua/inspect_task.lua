-- inspect_task: read everything about one task at once. It writes nothing, so it also
-- runs when the server is out of memory (a MULTI of reads does not).
--
-- KEYS[1] due, KEYS[2] running, KEYS[3] dead, KEYS[4] data, KEYS[5] lease, KEYS[6] meta,
-- KEYS[7] lane, KEYS[8] group (optional)
-- ARGV[1] id
--
-- Returns {due score, lease deadline, time of death, record, lease, stalls, error,
-- priority (with KEYS[7], the lane hash: see _lanes.lua), group (with KEYS[8], the group
-- hash: see _groups.lua)}, each
-- false (nil to the caller) when absent.

local id = ARGV[1]
return {
  redis.call('ZSCORE', KEYS[1], id),
  redis.call('ZSCORE', KEYS[2], id),
  redis.call('ZSCORE', KEYS[3], id),
  redis.call('HGET', KEYS[4], id),
  redis.call('HGET', KEYS[5], id),
  redis.call('HGET', KEYS[6], 's:' .. id),
  redis.call('HGET', KEYS[6], 'e:' .. id),
  KEYS[7] and redis.call('HGET', KEYS[7], id) or false,
  KEYS[8] and redis.call('HGET', KEYS[8], id) or false,
}
