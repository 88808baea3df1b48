--[[
  release: ends a hold, or leaves the line if the owner only waits, then hands
  the name to the next in line. Idempotent: a second run finds nothing to end.
  The hold key keeps the name's fencing counter (see basics.lua).

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] holder member, or "" when the owner does not know its token
          (it gave up waiting; a hand-over may have raced with that)
  ARGV[2] owner
  ARGV[3] fence ttl ms: how long the counter outlives this hold
  ARGV[4] wake-up channel prefix (a leader's release is also published on
          the name's observer channel: see basics.lua)
  ARGV[5] "1" when the member's token is a guess (Redlock: a node whose
          answer to the attempt had not come): if it does not match, the
          owner's hold is ended as with ARGV[1] "", else "0"
  ARGV[6] token clock unit µs for the grants of a hand-over (see acquire.lua)
  ARGV[7] "1" when the caller is not the owner's client: a hold it ends is
          told to the owner's client ("d"), as force-release tells "l"
  ARGV[8] (optional) "<token>|-", the counter the hold key keeps after the
          fast path: sent for an exclusive hold without lock delay released
          by its own client, the only holds the fast path ends

  Returns 1 if the owner held the name, else 0.
]]
--- @include "keys"

local member, owner = ARGV[1], ARGV[2]
-- The exclusive fast path: the owner's own hold, with nothing else to do
-- (flag "-": nobody waits). The key stays, as the counter: ARGV[8], which
-- the client sends only where this path may apply (its own exclusive hold,
-- no lock delay), so the script parses nothing to know.
-- The counter floor t comes with it: a release that hands over needs it, and
-- one MGET is cheaper than a second call.
local seen, floor
if ARGV[8] then
  seen = redis.call('MGET', X, base .. 't')
  seen, floor = seen[1], seen[2]
  if seen and string.sub(seen, 1, #member + 2) == member .. '|-' then
    redis.call('SET', X, ARGV[8], 'PX', ARGV[3])
    redis.call('ZREM', LISTED, NAME)
    -- A leader resigned (its note carries a value): tell the name's observers (basics.lua).
    if string.find(seen, '\0', 1, true) then
      local command = string.find(ARGV[4], '{', 1, true) and 'SPUBLISH' or 'PUBLISH'
      redis.call(command, ARGV[4] .. '=' .. base, '')
    end
    return 1
  end
end
local mode = string.match(member, '^[^|]*|(%a)')
local exclusive = mode == 'x' or mode == 'w'
local tellOwner = ARGV[7] == '1'
-- A hold in its lock delay (expired) is no longer the owner's: a release
-- keeps its phantom and answers 0, as the memory store does. Only holds with
-- a lock delay need the look (without one, an expired hold is gone).
local delay = tonumber(string.match(member, '|(%d+)$') or '0')
if exclusive and not ARGV[8] then
  seen = redis.call('MGET', X, base .. 't')
  seen, floor = seen[1], seen[2]
end

--- @include "token"
--- @include "basics"
if exclusive then
  seedHoldKey(seen)
  seedFloor(floor)
end

local fenceTtl = tonumber(ARGV[3])
local released = 0
local function expired(held)
  if delay == 0 then return false end
  if isExclusive(modeOf(select(2, parseMember(held)))) then return redis.call('PTTL', X) <= delay end
  local score = redis.call('ZSCORE', K.h, held)
  return score ~= false and tonumber(score) - delay <= select(2, clock())
end
if mode == 'r' or mode == 'p' then
  -- The shared fast path: the hold's member, and nobody waits.
  released = expired(member) and 0 or redis.call('ZREM', K.h, member)
  if released == 1 then redis.call('HDEL', K.d, owner) end
  -- A guessed token that missed goes on to the owner lookup below: else a
  -- Redlock node whose vote came late keeps a read hold nobody ends.
  if redis.call('EXISTS', K.q) == 0 and (released == 1 or ARGV[5] ~= '1') and not (tellOwner and released == 1) then
    -- The last shared hold gone, and nobody waits: the name is idle.
    if released == 1 and redis.call('EXISTS', K.h) == 0 then redis.call('ZREM', LISTED, NAME) end
    return released
  end
end

--- @include "lib"

local us, now = clock()
if (mode == 'x' or mode == 'w') and not (readHoldKey() == member and expired(member)) then
  released = dropHold(member, fenceTtl)
  -- Shared holds never sit beside an exclusive one: none to prune or count.
  noShared = released == 1
  -- A downgrade to read that crossed this release: end the read hold.
  if released == 0 and mode == 'w' then released = dropHold((string.gsub(member, '^([^|]*)|w', '%1|r')), fenceTtl) end
end
if released == 0 and member ~= '' and ARGV[5] == '1' then
  -- The token was a guess: the owner's hold whatever its token.
  local held = readHoldKey()
  local prefix = owner .. '|'
  if held and string.sub(held, 1, #prefix) == prefix then
    if not expired(held) then released = dropHold(held, fenceTtl) end
  else member = '' end
end
if member == '' then
  local held = holdOf(owner, now)
  if held then released = dropHold(held, fenceTtl) end
  leaveLine(owner)
end
local handedOver = false
if released == 1 or member == '' then
  if not noShared then prune(K.h, now) end
  handedOver = promote(ARGV[4], us, tonumber(ARGV[6]) or 1, now, fenceTtl)
end
-- A leader resigned: its observers hear it even when nobody was next in line.
if released == 1 and exclusive and noticeWanted(seen) then electionNotice(ARGV[4]) end
if tellOwner and released == 1 then wake(ARGV[4], owner, 'd|' .. owner) end
-- Handed to the line's head: the line may go on, so "s" without a look.
settle(handedOver)
return released
