--[[
  extend: renews one hold, only if it is still the owner's and not expired.

  KEYS[1] the hold's key: exclusive (STRING) for x / w, shared (ZSET) for r / p
  ARGV[1] holder member ("<owner>|<spec>|<token>|<lockDelayMs>")
  ARGV[2] new ttl ms
  ARGV[3] lock delay ms of the hold

  Returns the ttl set, or 0 when the hold is gone (expired, forced, replaced).
]]
--- @include "basics"

local key, member = KEYS[1], ARGV[1]
local ttl, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
if isExclusive(modeOf(select(2, parseMember(member)))) then
  if redis.call('GET', key) ~= member or redis.call('PTTL', key) <= delay then return 0 end
  redis.call('PEXPIRE', key, ttl + delay)
  return ttl
end
local now = storeNow()
local score = redis.call('ZSCORE', key, member)
if not score or tonumber(score) - delay <= now then return 0 end
redis.call('ZADD', key, 'XX', now + ttl + delay, member)
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', key, math.max(1, tonumber(last[2]) - now))
return ttl
