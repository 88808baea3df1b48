--[[
  downgrade: turns the owner's write hold into a read hold with the same
  token and lease end, then admits the readers queued behind it.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] the write hold's member ("<owner>|w…|<token>|<lockDelayMs>")
  ARGV[2] the read hold's member (same owner, token and delay, mode r)
  ARGV[3] wake-up channel prefix

  Returns 1, or 0 when the write hold is gone.
]]
--- @include "basics"
--- @include "lib"

local _, _, _, delay = parseMember(ARGV[1])
if redis.call('GET', KEYS[5]) ~= ARGV[1] then return 0 end
local left = redis.call('PTTL', KEYS[5])
if left <= delay then return 0 end
local now = storeNow()
redis.call('DEL', KEYS[5])
redis.call('ZADD', KEYS[1], now + left, ARGV[2])
redis.call('PEXPIRE', KEYS[1], left)
promote(KEYS, ARGV[3], now)
return 1
