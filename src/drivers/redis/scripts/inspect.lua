--[[
  inspect: a consistent snapshot of one name, read-only. Keys holding what
  baton did not write make it fail with a FOREIGN error.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV: none

  Returns {now, lastToken, {member, blockedUntil, ...}, {owner, info, ...}}
  (holds in their lock delay included; the caller compares times).
]]
--- @include "token"
--- @include "basics"
--- @include "lib"

checkTypes(KEYS)
local _, now = clock()
local holders = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. int(now), '+inf', 'WITHSCORES')
for i = 1, #holders, 2 do parseMember(holders[i]) end
local exclusive = redis.call('GET', KEYS[5])
if exclusive then
  parseMember(exclusive)
  table.insert(holders, exclusive)
  table.insert(holders, int(now + redis.call('PTTL', KEYS[5])))
end
local line = {}
for _, owner in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local info = redis.call('HGET', KEYS[4], owner) or ''
  if not parseLineInfo(info) then foreign('line entry') end
  table.insert(line, owner)
  table.insert(line, info)
end
local lastToken = redis.call('GET', KEYS[2]) or '0'
if not tonumber(lastToken) then foreign('fencing counter') end
return {now, lastToken, holders, line}
