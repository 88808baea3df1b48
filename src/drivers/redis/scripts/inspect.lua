--[[
  inspect: a consistent snapshot of one name, read-only.

  KEYS[1] holders   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo
  ARGV: none

  Returns {now, lastToken, {member, score, ...}, {owner, info, ...}}
  (expired-but-delaying members included; the caller filters by time).
]]
--- @include "basics"
--- @include "lib"

local now = storeNow()
local holders = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. int(now), '+inf', 'WITHSCORES')
local line = {}
for _, owner in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  table.insert(line, owner)
  table.insert(line, redis.call('HGET', KEYS[4], owner) or '')
end
return {now, redis.call('GET', KEYS[2]) or '0', holders, line}
