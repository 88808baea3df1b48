--[[
  redlock-unvote: a Redlock node's release of an exclusive hold without lock
  delay, when the hold key has the member with flag "-" (nobody waits here,
  no counter floor beside it): the key goes back to "<token>|-", the name's
  counter, for fenceTtl. Anything else answers false, and the client sends
  release.lua. release.lua's exclusive fast path without the counter
  floor's read (the flag says there is none) and an election's notice
  (refused on Redlock).

  KEYS[1] the name's base key "<prefix>:{<name>}:"
  ARGV[1] the hold's member "<owner>|<spec>|<token>|0"
  ARGV[2] "<token>|-", the counter the key keeps
  ARGV[3] fence ttl ms
  ARGV[4] the index of names in use (keys.lua LISTED)
  ARGV[5] the name, as the index keeps it

  Returns 1 if released; false: not decided here.
]]
local X = KEYS[1] .. 'x'
local seen = redis.call('GET', X)
if seen and string.sub(seen, 1, #ARGV[1] + 2) == ARGV[1] .. '|-' then
  redis.call('SET', X, ARGV[2], 'PX', ARGV[3])
  redis.call('ZREM', ARGV[4], ARGV[5])
  return 1
end
return false
