--[[
  force-release: admin; drops every hold of a name (lock delay included),
  tells each holder on its client's channel, then serves the line.

  KEYS[1] holders   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo
  ARGV[1] lock name
  ARGV[2] wake-up channel prefix

  Returns the number of live holds dropped.
]]
--- @include "basics"
--- @include "lib"

local holdersKey = KEYS[1]
local now = storeNow()
prune(holdersKey, now)
local dropped = 0
for _, member in ipairs(redis.call('ZRANGE', holdersKey, 0, -1)) do
  local owner = parseMember(member)
  redis.call('PUBLISH', ARGV[2] .. clientOf(owner), 'l|' .. owner .. '|released by force (forceRelease)')
  dropped = dropped + 1
end
redis.call('DEL', holdersKey)
promote(KEYS, ARGV[1], ARGV[2], now)
return dropped
