--[[
  inspect: a consistent snapshot of one name, read-only. Keys holding what
  baton did not write make it fail with a FOREIGN error, or with Redis'
  WRONGTYPE as it reads them (the driver reports both alike): no TYPE call
  per key first, since list inspects every name of a page.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV: none

  Returns {now, lastToken, {member, blockedUntil, since, description, ...}, {owner, info, ...}}
  (holds in their lock delay included; the caller compares times; since
  and description are "" where unknown).
]]
--- @include "keys"
--- @include "token"
-- Not basics.lua and lib.lua: building their functions would cost more than
-- the snapshot (list inspects every name of a page).
local K = { h = base .. 'h', d = base .. 'd', t = base .. 't', q = base .. 'q', qi = base .. 'qi' }

local _, now = clock()
local holders = {}
local shared = redis.call('ZRANGEBYSCORE', K.h, '(' .. int(now), '+inf', 'WITHSCORES')
for i = 1, #shared, 2 do
  local owner = parseMember(shared[i])
  local since, description = string.match(redis.call('HGET', K.d, owner) or '|', '^(%d*)|(.*)$')
  for _, field in ipairs({shared[i], shared[i + 1], since or '', description or ''}) do table.insert(holders, field) end
end
-- The hold key, as basics.lua's readHoldKey reads it.
local value = redis.call('GET', X)
local member, counter
if value then
  member = parseHeld(value)
  if member then
    counter = tonumber((select(3, parseMember(member))))
  else
    counter = tonumber((freeCounter(value)))
    if not counter then foreign('hold key "' .. string.sub(value, 1, 40) .. '"') end
  end
end
if member then
  local _, _, since, description = parseHeld(value)
  for _, field in ipairs({member, int(now + redis.call('PTTL', X)), since, description}) do table.insert(holders, field) end
end
local line = {}
for _, owner in ipairs(redis.call('ZRANGE', K.q, 0, -1)) do
  local info = redis.call('HGET', K.qi, owner) or ''
  if not parseLineInfo(info) then foreign('line entry') end
  table.insert(line, owner)
  table.insert(line, info)
end
local floor = redis.call('GET', K.t)
if floor and not tonumber(floor) then foreign('fencing counter') end
local lastToken = math.max(counter or 0, tonumber(floor) or 0)
return {now, int(lastToken), holders, line}
