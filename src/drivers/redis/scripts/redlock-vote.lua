--[[
  redlock-vote: a Redlock node's vote for an exclusive hold (a mutex, or the
  write side of a read-write lock) on a name that is free here with nothing
  else around it: the hold key says "<counter>|-" (basics.lua: flag "-"
  promises no shared holds, no line, no counter floor), or it is missing and
  so are the name's other keys. Anything else answers false, and the client
  sends acquire.lua, which decides every other case (the owner's own hold,
  a conflict of kinds, a line), except a holder of the same kind with
  nothing else around: busy, answered here as acquire.lua would. The layout is acquire.lua's (the
  same hold key value), so every other script reads what this one wrote.

  What it leaves out of acquire.lua's exclusive fast path, all for Redlock:
  an election's notice
  (Redlock refuses elections), the slow path's arguments, the store clock
  while a counter is kept (the hold's "since", for inspect only, is the
  client's clock, sent in the value's tail), and with it the clock floor:
  the token is the counter + 1, so the nodes that granted the last lease
  (each raised to its token) draw the same token again, and no raise
  follows. A missing key seeds the counter from the store clock floored to
  whole ms, in µs, as acquire.lua does on Redlock nodes. A counter grows by
  one a grant, the clock by one a µs: a token drawn here stays below the
  clock floor of any later moment while a name averages fewer than one grant
  per µs since its counter was seeded, so a counter lost (a restart,
  fenceTtl) and seeded again still draws larger tokens
  (src/drivers/redlock/index.ts).

  KEYS[1] the name's base key "<prefix>:{<name>}:"
  ARGV[1] "<owner>|<spec>" (spec: x, xf, w or wf)
  ARGV[2] the value's tail "<lock delay ms>|-|<since: client ms>|<description>"
  ARGV[3] the hold key's expiry: ttl + lock delay, ms
  ARGV[4] the index of names in use (keys.lua LISTED), which list reads
  ARGV[5] the name, as the index keeps it

  Returns the token (digits), granted for the ttl; {0, retryAfterMs,
  holderMember, holderEnd} busy (as acquire.lua); false: not decided here.
]]
local base = KEYS[1]
local X = base .. 'x'
local seen = redis.call('GET', X)
local token
if seen then
  local counter = string.match(seen, '^(%d+)|%-$')
  if not counter then
    -- Held by another owner of the same kind, nothing else here: busy, as
    -- acquire.lua answers it (one round trip, not two, under contention).
    local member, owner, letter, delay = string.match(seen, '^(([^|]*)|(%a)[^|]*|%d+|(%d+))|%-|')
    local mine, myLetter = string.match(ARGV[1], '^([^|]*)|(%a)')
    if not member or owner == mine or letter ~= myLetter then return false end
    local left = redis.call('PTTL', X)
    local t = redis.call('TIME')
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    return {0, math.max(1, left), member, now + left - tonumber(delay)}
  end
  token = string.format('%d', tonumber(counter) + 1)
elseif redis.call('EXISTS', base .. 'h', base .. 'q', base .. 't', base .. 'o') == 0 then
  -- A name new here, idle past fenceTtl, or its hold expired, and nothing
  -- else of it exists: the counter is seeded from the clock.
  local t = redis.call('TIME')
  token = t[1] .. string.sub('00' .. math.floor(t[2] / 1000), -3) .. '000'
else
  return false
end
redis.call('SET', X, ARGV[1] .. '|' .. token .. '|' .. ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', ARGV[4], 0, ARGV[5])
return token
