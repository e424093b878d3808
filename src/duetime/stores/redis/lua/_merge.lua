-- _merge: the deep merge of `if_exists="merge"` (duetime.triggers.periodic.deep_merge), made
-- on JSON text: nested objects merge key by key, anything else in the changes (lists
-- included) replaces what the payload held, keys "__proto__", "constructor" and
-- "prototype" of the changes are skipped. The text of every value not merged is kept as it
-- is (no decode and encode: numbers, escapes and key order stay exactly as written), so the
-- result is the text duetime's Python code would write. Any text it cannot read makes it
-- return nil: the caller then leaves the merge to Python (which says what is wrong).

-- The index of the first character at or after `i` that is not white space.
local function json_ws(s, i)
  return string.find(s, '[^ \t\r\n]', i) or #s + 1
end

-- The index after the string that starts at `i` (a '"'), or nil.
local function json_string_end(s, i)
  local j = i + 1
  while true do
    local q = string.find(s, '["\\]', j)
    if not q then
      return nil
    end
    if string.byte(s, q) == 92 then
      j = q + 2
    else
      return q + 1
    end
  end
end

-- The index after the value that starts at `i`, or nil.
local function json_value_end(s, i)
  local c = string.byte(s, i)
  if c == 34 then
    return json_string_end(s, i)
  end
  if c == 123 or c == 91 then
    local depth, j = 0, i
    while true do
      local p = string.find(s, '[%[%]{}"]', j)
      if not p then
        return nil
      end
      local b = string.byte(s, p)
      if b == 34 then
        j = json_string_end(s, p)
        if not j then
          return nil
        end
      else
        depth = depth + ((b == 123 or b == 91) and 1 or -1)
        j = p + 1
        if depth == 0 then
          return j
        end
      end
    end
  end
  if not c then
    return nil
  end
  return string.find(s, '[,}%]%s]', i) or #s + 1
end

-- The members of the object whose text is `s` ({key, raw key text, value text} each, in
-- order), or nil.
local function json_members(s)
  local j = json_ws(s, 1)
  if string.byte(s, j) ~= 123 then
    return nil
  end
  local out = {}
  j = json_ws(s, j + 1)
  if string.byte(s, j) == 125 then
    return out
  end
  while true do
    if string.byte(s, j) ~= 34 then
      return nil
    end
    local key_end = json_string_end(s, j)
    if not key_end then
      return nil
    end
    local raw = string.sub(s, j, key_end - 1)
    local ok, key = pcall(cjson.decode, raw)
    if not ok or type(key) ~= 'string' then
      return nil
    end
    j = json_ws(s, key_end)
    if string.byte(s, j) ~= 58 then
      return nil
    end
    local from = json_ws(s, j + 1)
    local to = json_value_end(s, from)
    if not to then
      return nil
    end
    out[#out + 1] = {key, raw, string.sub(s, from, to - 1)}
    j = json_ws(s, to)
    local b = string.byte(s, j)
    if b == 125 then
      return out
    elseif b ~= 44 then
      return nil
    end
    j = json_ws(s, j + 1)
  end
end

-- The text of an object of `members`, compact.
local function json_object(members)
  local parts = {}
  for k, m in ipairs(members) do
    parts[k] = m[2] .. ':' .. m[3]
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

local MERGE_SKIPPED = {__proto__ = true, constructor = true, prototype = true}

-- `base` (an object's text) with `changes` (an object's text) deep-merged into it, or nil.
local function deep_merge(base, changes)
  local into, from = json_members(base), json_members(changes)
  if not into or not from then
    return nil
  end
  local at = {}
  for k, m in ipairs(into) do
    at[m[1]] = k
  end
  for _, m in ipairs(from) do
    if not MERGE_SKIPPED[m[1]] then
      local k = at[m[1]]
      if not k then
        into[#into + 1] = {m[1], m[2], m[3]}
        at[m[1]] = #into
      elseif string.byte(into[k][3], 1) == 123 and string.byte(m[3], 1) == 123 then
        local merged = deep_merge(into[k][3], m[3])
        if not merged then
          return nil
        end
        into[k][3] = merged
      else
        into[k][3] = m[3]
      end
    end
  end
  return json_object(into)
end

-- RECORD_DROPPED: the record fields a task that only runs does not pass on to the new
-- occurrence a merge makes of it (its occurrence, attempts and traceback).
local RECORD_DROPPED = {o = true, f = true, t = true}

-- The record a merge of `changes` writes over the pending `record` (see
-- duetime/stores/merging.py): its payload ("p") merged, and, when the task only runs
-- (`runs`), without its occurrence, attempts and traceback; `unique` (ms, 0: none) replaces
-- its "q". Returns the record and the merged payload's size in bytes, or nil.
local function merged_record(record, changes, runs, unique)
  local members = json_members(record)
  if not members or #members == 0 or members[1][1] ~= 'p' then
    return nil
  end
  local payload = deep_merge(members[1][3], changes)
  if not payload then
    return nil
  end
  local out = {{'p', '"p"', payload}}
  local has_q = false
  for k = 2, #members do
    local m = members[k]
    if m[1] == 'q' and unique > 0 then
      m = {'q', '"q"', string.format('%d', unique)}
      has_q = true
    elseif m[1] == 'q' then
      has_q = true
    end
    if not (runs and RECORD_DROPPED[m[1]]) then
      out[#out + 1] = m
    end
  end
  if unique > 0 and not has_q then
    out[#out + 1] = {'q', '"q"', string.format('%d', unique)}
  end
  return json_object(out), #payload
end
