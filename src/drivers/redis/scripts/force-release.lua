--[[
  force-release: admin; drops every hold of a name (lock delay included),
  tells each holder on its client's channel, then serves the line.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] wake-up channel prefix

  Returns the number of holds dropped.
]]
--- @include "basics"
--- @include "lib"

local now = storeNow()
prune(KEYS[1], now)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local exclusive = redis.call('GET', KEYS[5])
if exclusive then table.insert(members, exclusive) end
for _, member in ipairs(members) do
  local owner = parseMember(member)
  redis.call('PUBLISH', ARGV[1] .. clientOf(owner), 'l|' .. owner .. '|released by force (forceRelease)')
end
redis.call('DEL', KEYS[1], KEYS[5])
promote(KEYS, ARGV[1], now)
return #members
