-- Shared gate functions: scripts.py puts this text after the preamble of the scripts that
-- read or write a task type's gates (claim_due, settle). It is the Lua copy of
-- duetime/stores/gating.py: the same arithmetic, line for line.
--
-- A type's gate hash holds each field only while it is set:
--   paused  "1" while the type is paused (pause.lua)
--   hold    ms: no task of the type starts before it (a handler's RateLimited)
--   tat     ms: its rate's theoretical arrival time (a GCRA), by the store's clock: a start
--           is allowed at `now` while tat - now is within the tolerance, (burst - 1) *
--           interval, and each start moves tat on by the interval
--   wait    "1" once a claim found the type at its global concurrency: the settle that
--           ends one of its runs wakes the workers and clears it
-- The limits come with each claim (the type's code): the rate's interval between starts
-- and burst, and the most tasks running at once.

-- Slack in comparisons of rate times, which are fractions of a millisecond.
local EPSILON = 1e-6

-- The gate hash as a table {paused, hold, tat} (a field that is not a number is unset).
local function gate_read(gate)
  local f = redis.call('HMGET', gate, 'paused', 'hold', 'tat')
  return {paused = f[1] == '1', hold = tonumber(f[2] or ''), tat = tonumber(f[3] or ''),
          running = 0}
end

-- How many tasks a claim at `now` may start: `limit` at most, none while paused or held.
local function gate_allowance(state, now, limit, interval, burst, max_running)
  if state.paused or (state.hold and state.hold > now) then
    return 0
  end
  local n = limit
  if max_running > 0 then
    n = math.min(n, math.max(0, max_running - state.running))
  end
  if interval > 0 then
    local base = math.max(state.tat or now, now)
    local tolerance = (burst - 1) * interval
    local ahead = base - now
    if ahead > tolerance + EPSILON then
      return 0
    end
    n = math.min(n, math.floor((tolerance - ahead) / interval + EPSILON) + 1)
  end
  return n
end

-- When a gate closed at `now` opens by time alone, or nil (paused, or only the running
-- count holds it: a settle wakes the workers).
local function gate_opens(state, now, interval, burst)
  if state.paused then
    return nil
  end
  local at
  if state.hold and state.hold > now then
    at = state.hold
  end
  if interval > 0 and state.tat then
    local opens = math.max(state.tat, now) - (burst - 1) * interval
    if opens > now + EPSILON then
      at = math.max(at or opens, opens)
    end
  end
  if not at then
    return nil
  end
  return math.ceil(at - EPSILON)
end
