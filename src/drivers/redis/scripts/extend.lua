--[[
  extend: renews one hold, only if it is still the owner's and not expired.
  A write hold that a downgrade turned into a read hold meanwhile (the two
  crossed) is found and renewed as that read hold.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] holder member ("<owner>|<spec>|<token>|<lockDelayMs>")
  ARGV[2] new ttl ms
  ARGV[3] lock delay ms of the hold

  Returns the ttl set, or 0 when the hold is gone (expired, forced, replaced).
]]
--- @include "keys"
--- @include "token"
--- @include "basics"

local member = ARGV[1]
local ttl, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local mode = modeOf(select(2, parseMember(member)))
if isExclusive(mode) then
  local value = redis.call('GET', X)
  if value and string.sub(value, 1, #member + 1) == member .. '|' then
    if redis.call('PTTL', X) <= delay then return 0 end
    redis.call('PEXPIRE', X, ttl + delay)
    -- Listed again should a hold predate the index (a client before it).
    redis.call('ZADD', LISTED, 0, NAME)
    return ttl
  end
  if mode ~= 'w' then return 0 end
  member = string.gsub(member, '^([^|]*)|w', '%1|r')
end
local _, now = clock()
local score = redis.call('ZSCORE', K.h, member)
if not score or tonumber(score) - delay <= now then return 0 end
renewShared(K.h, member, now, ttl, delay)
redis.call('ZADD', LISTED, 0, NAME)
return ttl
