--[[
  downgrade: turns the owner's write hold into a read hold with the same
  token and lease end, then admits the readers queued behind it. Idempotent:
  a second run finds the read hold and answers 1 again.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] the write hold's member ("<owner>|w…|<token>|<lockDelayMs>")
  ARGV[2] the read hold's member (same owner, token and delay, mode r)
  ARGV[3] wake-up channel prefix
  ARGV[4] fence ttl ms

  Returns 1, or 0 when the hold is gone.
]]
--- @include "keys"
--- @include "token"
--- @include "basics"
--- @include "lib"

local owner, _, token, delay = parseMember(ARGV[1])
local us, now = clock()
local held, _, value = readHoldKey()
if held ~= ARGV[1] then
  local score = redis.call('ZSCORE', K.h, ARGV[2])
  return (score and tonumber(score) - delay > now) and 1 or 0
end
local left = redis.call('PTTL', X)
if left <= delay then return 0 end
local _, _, since, description = parseHeld(value)
freeHoldKey(tonumber(token), math.max(tonumber(ARGV[4]), left))
redis.call('ZADD', K.h, now + left, ARGV[2])
if redis.call('PTTL', K.h) < left then redis.call('PEXPIRE', K.h, left) end
redis.call('HSET', K.d, owner, since .. '|' .. description)
if redis.call('PTTL', K.d) < left then redis.call('PEXPIRE', K.d, left) end
promote(ARGV[3], us, 1, now, tonumber(ARGV[4]))
settle()
return 1
