--[[
  downgrade: turns the owner's write hold into a read hold with the same
  token and lease end, then admits the readers queued behind it. Idempotent:
  a second run finds the read hold and answers 1 again.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] the write hold's member ("<owner>|w…|<token>|<lockDelayMs>")
  ARGV[2] the read hold's member (same owner, token and delay, mode r)
  ARGV[3] wake-up channel prefix
  ARGV[4] fence ttl ms

  Returns 1, or 0 when the hold is gone.
]]
--- @include "token"
--- @include "basics"
--- @include "lib"

local _, _, _, delay = parseMember(ARGV[1])
local us, now = clock()
if redis.call('GET', KEYS[5]) ~= ARGV[1] then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
  return (score and tonumber(score) - delay > now) and 1 or 0
end
local left = redis.call('PTTL', KEYS[5])
if left <= delay then return 0 end
redis.call('DEL', KEYS[5])
redis.call('ZADD', KEYS[1], now + left, ARGV[2])
if redis.call('PTTL', KEYS[1]) < left then redis.call('PEXPIRE', KEYS[1], left) end
promote(KEYS, ARGV[3], us, now, tonumber(ARGV[4]))
return 1
