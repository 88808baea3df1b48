#!lua flags=no-writes,allow-cross-slot-keys
--[[
  list-slots: one page of the index of names in use (keys.ts listedKey)
  over many slots of one Redis Cluster master, in one call: list on a
  Cluster sends it to each master for the slots the client's map says that
  master serves, instead of one ZRANGEBYLEX per slot (16,384 a page).
  Redis >= 7.0 (the shebang): it reads keys of many slots, none declared
  (the slots' index keys would be 5,000 keys a call); a key of a slot the
  node no longer serves, or is giving away and no longer has, fails the
  whole call ("non local key"), and the client reads that master's slots
  one by one instead (inspect.ts), following moves. Read-only.

  KEYS: none
  ARGV[1] min, as ZRANGEBYLEX takes it ("(<after>" or "[<prefix>")
  ARGV[2] max, as ZRANGEBYLEX takes it ("+" or "(<prefix>\xff")
  ARGV[3] count: how many names to return at most; 0 for every name
  ARGV[4] the index keys' head, ARGV[5] their tail: a slot's index is
          head .. <slot tag> .. tail (keys.ts listedKeyParts)
  ARGV[6..] the slot tags of the slots to read

  Returns the first `count` names of all these indexes in byte order
  (every name when count is 0, in no particular order: the client sorts).
]]

local min, max, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local head, tail = ARGV[4], ARGV[5]

if count == 0 then
  local all = {}
  for i = 6, #ARGV do
    local found = redis.call('ZRANGEBYLEX', head .. ARGV[i] .. tail, min, max)
    for j = 1, #found do all[#all + 1] = found[j] end
  end
  return all
end

-- Byte order, as the index and the client sort: Lua's "<" follows the
-- server's collation locale, which may not be bytes.
local byte = string.byte
local function before(a, b)
  local n = #a < #b and #a or #b
  for i = 1, n do
    local x, y = byte(a, i), byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The first `count` names so far, sorted. Once it is full, a slot is read
-- only below its last name: most slots then have nothing to read. A slot
-- is counted (ZLEXCOUNT) before it is read: most slots have no name in
-- the range (no index at all, or only later names), and a count, whose
-- reply is an integer, costs Redis less than an empty ZRANGEBYLEX, whose
-- reply becomes a table. Measured on one master's 5,461 slots with 10,000
-- names held (16 calls each, medians, a shared machine at load 6):
-- 19.2 -> 15.4 ms for a first page, 12.5 -> 10.6 ms for a later one.
-- Reading every name (count 0) does not count first: about half of the
-- slots have a name then, and counting them too cost more than it saved.
local page = {}
for i = 6, #ARGV do
  local key = head .. ARGV[i] .. tail
  local upper = #page < count and max or '(' .. page[#page]
  local found = redis.call('ZLEXCOUNT', key, min, upper) > 0 and redis.call('ZRANGEBYLEX', key, min, upper, 'LIMIT', 0, count) or {}
  for j = 1, #found do
    local name = found[j]
    local lo, hi = 1, #page + 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if before(page[mid], name) then lo = mid + 1 else hi = mid end
    end
    table.insert(page, lo, name)
    if #page > count then page[#page] = nil end
  end
end
return page
