--[[
  inspect: a consistent snapshot of one name, read-only.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV: none

  Returns {now, lastToken, {member, blockedUntil, ...}, {owner, info, ...}}
  (holds in their lock delay included; the caller compares times).
]]
--- @include "basics"

local now = storeNow()
local holders = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. int(now), '+inf', 'WITHSCORES')
local exclusive = redis.call('GET', KEYS[5])
if exclusive then
  table.insert(holders, exclusive)
  table.insert(holders, int(now + redis.call('PTTL', KEYS[5])))
end
local line = {}
for _, owner in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  table.insert(line, owner)
  table.insert(line, redis.call('HGET', KEYS[4], owner) or '')
end
return {now, redis.call('GET', KEYS[2]) or '0', holders, line}
