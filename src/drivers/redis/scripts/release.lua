--[[
  release: ends a hold, or leaves the line if the owner only waits, then hands
  the name to the next in line.

  KEYS[1] holders   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo
  ARGV[1] holder member, or "" when the owner does not know its token
          (it gave up waiting; a hand-over may have raced with that)
  ARGV[2] owner
  ARGV[3] lock name
  ARGV[4] wake-up channel prefix

  Returns 1 if the owner held the name, else 0.
]]

local holdersKey, lineKey, infoKey = KEYS[1], KEYS[3], KEYS[4]
local member, owner = ARGV[1], ARGV[2]

local released = 0
if member ~= '' then
  released = redis.call('ZREM', holdersKey, member)
  -- Fast path: nobody waits, nothing to hand over.
  if redis.call('EXISTS', lineKey) == 0 then return released end
end

--- @include "basics"
--- @include "lib"

if member == '' then
  for _, held in ipairs(redis.call('ZRANGE', holdersKey, 0, -1)) do
    if string.sub(held, 1, #owner + 1) == owner .. '|' then
      released = redis.call('ZREM', holdersKey, held)
    end
  end
  leaveLine(lineKey, infoKey, owner)
end

if released == 1 or member == '' then
  local now = storeNow()
  prune(holdersKey, now)
  promote(KEYS, ARGV[3], ARGV[4], now)
end
return released
