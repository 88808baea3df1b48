--[[
  extend: renews one hold, only if it is still the owner's and not expired.

  KEYS[1] holders
  ARGV[1] holder member ("<owner>|<spec>|<token>|<lockDelayMs>")
  ARGV[2] new ttl ms
  ARGV[3] lock delay ms of the hold

  Returns the ttl set, or 0 when the hold is gone (expired, forced, replaced).
]]
--- @include "basics"

local holdersKey, member = KEYS[1], ARGV[1]
local ttl, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = storeNow()
local score = redis.call('ZSCORE', holdersKey, member)
if not score or tonumber(score) - delay <= now then return 0 end
redis.call('ZADD', holdersKey, 'XX', now + ttl + delay, member)
local _, spec = parseMember(member)
if modeOf(spec) == 'x' or modeOf(spec) == 'w' then
  -- An exclusive holder is alone: the key lives exactly as long as it does.
  redis.call('PEXPIRE', holdersKey, ttl + delay)
else
  -- Shared holders: the key lives as long as the longest of them.
  local last = redis.call('ZRANGE', holdersKey, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', holdersKey, math.max(1, tonumber(last[2]) - now))
end
return ttl
