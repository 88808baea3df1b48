--[[
  acquire: one attempt to take a name; if it is busy, optionally wait in line.
  Idempotent: an owner that already holds the name gets its hold back (renewed
  to ttl, same token); an owner already in line keeps its place.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] owner
  ARGV[2] spec ("x", "r", "wf", "p5", ... see basics.lua)
  ARGV[3] ttl ms
  ARGV[4] lock delay ms
  ARGV[5] "1" to join (or stay in) the line when busy, else "0"
  ARGV[6] line entry ttl ms: dropped unless refreshed within it
  ARGV[7] lock name (for messages)
  ARGV[8] wake-up channel prefix
  ARGV[9] fence ttl ms: the counter outlives the last lease by this much
  ARGV[10] token clock unit µs (optional, default 1): the clock floor of the
           fencing counter is the store clock rounded down to this many µs.
           Redlock nodes pass 1000, so that independent nodes, which each draw
           a token, agree in the common case (src/drivers/redlock/)

  Returns
    {1, token, ttlMs}                            granted
    {0, retryAfterMs, holderMember, holderEnd}   busy (holder fields may be false)
    {-1, detail}                                 conflict: can never succeed as asked
]]
--- @include "token"

-- The exclusive fast path (see token.lua): nobody waits and the name is free.
local mode = string.sub(ARGV[2], 1, 1)
if (mode == 'x' or mode == 'w') and redis.call('EXISTS', KEYS[5], KEYS[1], KEYS[3]) == 0 then
  local ttl, delay = tonumber(ARGV[3]), tonumber(ARGV[4])
  local us = clock()
  local unit = tonumber(ARGV[10])
  if unit then us = us - us % unit end
  local token = nextToken(KEYS[2], us, tonumber(ARGV[9]))
  redis.call('SET', KEYS[5], memberOf(ARGV[1], ARGV[2], token, delay), 'PX', ttl + delay)
  return {1, token, ttl}
end

--- @include "basics"

local owner, spec = ARGV[1], ARGV[2]
local ttl, delay, fenceTtl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[9])
local unit = tonumber(ARGV[10]) or 1

-- The store clock: microseconds floored to `unit` (the token floor only), and ms.
local function tokenClock()
  local us, now = clock()
  return us - us % unit, now
end

-- The shared fast path: nobody waits, and the name is free or shared by
-- live holds of the very same kind and permit count (read, permit).
if not isExclusive(mode) and redis.call('EXISTS', KEYS[5], KEYS[3]) == 0 then
  local us, now = tokenClock()
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local base = string.gsub(spec, 'f$', '')
  local fast = not first[1]
  if not fast and tonumber(first[2]) > now and string.gsub(select(2, parseMember(first[1])), 'f$', '') == base then
    local mine, ends = sharedHoldOf(KEYS[1], owner)
    if mine then
      local _, _, token, myDelay = parseMember(mine)
      if ends - myDelay > now then
        renewShared(KEYS[1], mine, now, ttl, myDelay)
        return {1, tonumber(token), ttl}
      end
    else
      fast = mode == 'r' or redis.call('ZCARD', KEYS[1]) < tonumber(string.sub(base, 2))
    end
  end
  if fast then
    local token = nextToken(KEYS[2], us, fenceTtl)
    renewShared(KEYS[1], memberOf(owner, spec, token, delay), now, ttl, delay)
    return {1, token, ttl}
  end
end

--- @include "lib"

local lineKey, infoKey = KEYS[3], KEYS[4]
local name, channelPrefix = ARGV[7], ARGV[8]
local us, now = tokenClock()
prune(KEYS[1], now)

local sample = sampleHolder(KEYS, now)
local otherSpec = sample and select(2, parseMember(sample))
if not otherSpec then
  local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
  otherSpec = head and parseLineInfo(redis.call('HGET', infoKey, head))
end
if otherSpec then
  local why = conflict(name, spec, otherSpec)
  if why then return {-1, why} end
end

-- Serve the line only when this owner is its (live) head: an attempt of
-- anyone else never grants the name to a head that may be dead (a forced
-- release, or a holder's lease running out, would otherwise hand the name to
-- a killed waiter for its whole ttl); a dead head's entry goes stale within
-- its line ttl and the next attempt drops it.
local lineExists = redis.call('EXISTS', lineKey) == 1
if lineExists and liveHead(lineKey, infoKey, now) == owner then promote(KEYS, channelPrefix, us, now, fenceTtl) end

-- Already holding (an earlier run of this very attempt, or a hand-over whose
-- wake-up was lost or is late): the same hold, renewed, never a second one.
local held = holdOf(KEYS, owner, now)
if held then
  renewHold(KEYS, held, now, ttl)
  local _, _, token = parseMember(held)
  return {1, tonumber(token), ttl}
end

local queued = lineExists and redis.call('ZSCORE', lineKey, owner)
local lineEmpty = not lineExists or redis.call('EXISTS', lineKey) == 0
if not queued and (lineEmpty or not isFair(spec)) and fits(KEYS, mode, permitsOf(spec), writerWaiting(infoKey)) then
  local token = grant(KEYS, owner, spec, ttl, delay, us, now, fenceTtl)
  return {1, token, ttl}
end

local lineTtl = tonumber(ARGV[6])
if ARGV[5] == '1' then
  if not queued then
    local arrival = redis.call('HINCRBY', infoKey, '~seq', 1)
    redis.call('ZADD', lineKey, arrival, owner)
    if isExclusive(mode) then redis.call('HINCRBY', infoKey, '~w', 1) end
    queued = true
  end
  redis.call('HSET', infoKey, owner, spec .. '|' .. int(ttl) .. '|' .. int(delay) .. '|' .. int(now + lineTtl))
  for _, key in ipairs({lineKey, infoKey}) do
    if redis.call('PTTL', key) < lineTtl then redis.call('PEXPIRE', key, lineTtl) end
  end
end

-- When to try again without a wake-up. Only the head of the line is timed
-- to the holder's lease end (a dead holder's name is then claimed by one
-- attempt, not by every waiter at once); the others are served by wake-ups
-- and otherwise come back when their line entry needs refreshing.
local sampleEnd
sample, sampleEnd = sampleHolder(KEYS, now)
local isHead = not queued or redis.call('ZRANK', lineKey, owner) == 0
if not sample then
  return {0, isHead and 1 or lineTtl, false, false}
end
local _, _, _, sampleDelay = parseMember(sample)
return {0, isHead and math.max(1, sampleEnd - now) or lineTtl, sample, sampleEnd - sampleDelay}
