--[[
  acquire: one attempt to take a name; if it is busy, optionally wait in line.
  Idempotent: an owner that already holds the name gets its hold back (renewed
  to ttl, same token); an owner already in line keeps its place.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] owner
  ARGV[2] spec ("x", "r", "wf", "p5", ... see basics.lua)
  ARGV[3] ttl ms
  ARGV[4] lock delay ms
  ARGV[5] token clock unit µs: the clock floor of the fencing counter is the
          store clock rounded down to this many µs. Redlock nodes pass 1000,
          so that independent nodes, which each draw a token, agree in the
          common case (src/drivers/redlock/)
  ARGV[6] what only the slow path reads, in one argument:
          "<join 1|0>|<line entry ttl ms>|<fence ttl ms>|<wake-up channel prefix>"
          join: 1 to join (or stay in) the line when busy; a line entry is
          dropped unless refreshed within its ttl; the fence ttl is how long
          the counter outlives the name's last hold
  ARGV[7] description of the owner (optional, at most 256 bytes), kept with
          the hold or line entry for inspect; a leader election's candidate
          adds "\0<value>" (see basics.lua), and its grant is published to
          the name's observers

  Returns
    token                                        granted by the fast path, for ttl
    {1, token, ttlMs}                            granted
    {0, retryAfterMs, holderMember, holderEnd}   busy (holder fields may be false)
    {-1, detail}                                 conflict: can never succeed as asked
]]
--- @include "keys"

-- The exclusive fast path: the hold key says the name is free and nothing
-- else (no line, no shared holds) exists. One read, TIME, one write. A
-- name never used (or idle past fenceTtl) has no hold key, which promises
-- nothing: one EXISTS then shows that nothing else exists either, and the
-- token is the clock floor (as nextToken with no counter).
-- Every step is the cheapest Lua has for it (measured with INFO
-- commandstats, docs/hot-path.md): strings are spliced as they came, not
-- formatted; digits of equal length are compared as strings, not numbers;
-- the grant answers its token alone (a bulk string, not a table).
local mode = string.sub(ARGV[2], 1, 1)
local exclusive = mode == 'x' or mode == 'w'
local seen
if exclusive then
  seen = redis.call('GET', X)
  local counter = seen and string.match(seen, '^(%d+)|%-$')
  -- Redlock nodes (a token clock unit other than 1) keep the slow path for
  -- a missing key: see batchScripts in src/drivers/redis/index.ts.
  if counter or (not seen and ARGV[5] == '1' and redis.call('EXISTS', base .. 'h', base .. 'q', base .. 't', base .. 'o') == 0) then
    local t = redis.call('TIME')
    local us = t[1] .. string.sub('00000' .. t[2], -6)
    local token = us
    if ARGV[5] ~= '1' or (counter and (#counter > #us or (#counter == #us and counter >= us))) then
      -- As token.lua's nextToken: above the counter, floored to the unit.
      local floor = tonumber(us) - tonumber(us) % tonumber(ARGV[5])
      token = string.format('%d', math.max(counter and tonumber(counter) + 1 or 0, floor))
    end
    redis.call('SET', X, ARGV[1] .. '|' .. ARGV[2] .. '|' .. token .. '|' .. ARGV[4] .. '|-|' .. string.sub(us, 1, -4) .. '|' .. (ARGV[7] or ''),
      'PX', ARGV[4] == '0' and ARGV[3] or ARGV[3] + ARGV[4])
    redis.call('ZADD', LISTED, 0, NAME)
    -- A leader elected (its note carries a value): tell the name's observers (basics.lua).
    if ARGV[7] and string.find(ARGV[7], '\0', 1, true) then
      local channelPrefix = string.match(ARGV[6], '^[01]|%d+|%d+|(.*)$')
      local command = string.find(channelPrefix, '{', 1, true) and 'SPUBLISH' or 'PUBLISH'
      redis.call(command, channelPrefix .. '=' .. base, '')
    end
    return token
  end
end

--- @include "token"
--- @include "basics"
if exclusive then seedHoldKey(seen) end

local owner, spec, description = ARGV[1], ARGV[2], ARGV[7]
local ttl, delay, unit = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local join, lineTtl, fenceTtl, channelPrefix = string.match(ARGV[6], '^([01])|(%d+)|(%d+)|(.*)$')
lineTtl, fenceTtl = tonumber(lineTtl), tonumber(fenceTtl)

-- The shared fast path: nobody waits, and the name is free or shared by
-- live holds of the very same kind and permit count (read, permit).
if not exclusive then
  local value = holdKeyValue()
  local counter = value and freeCounter(value)
  if (not value or counter) and redis.call('EXISTS', K.q, K.t) == 0 then
    local us, now = clock()
    local first = redis.call('ZRANGE', K.h, 0, 0, 'WITHSCORES')
    local kind = string.gsub(string.gsub(spec, 'f$', ''), '%*%d+$', '')
    local fast = not first[1]
    if not fast and tonumber(first[2]) > now and string.gsub(string.gsub(select(2, parseMember(first[1])), 'f$', ''), '%*%d+$', '') == kind then
      local mine, ends = sharedHoldOf(K.h, owner)
      if mine then
        local _, _, token, myDelay = parseMember(mine)
        if ends - myDelay > now then
          renewShared(K.h, mine, now, ttl, myDelay)
          return {1, tonumber(token), ttl}
        end
      else
        fast = mode == 'r' or weightHeld(tonumber(string.sub(kind, 2))) + weightOf(spec) <= tonumber(string.sub(kind, 2))
      end
    end
    if fast then
      local token = nextToken(tonumber(counter), us, unit)
      renewShared(K.h, memberOf(owner, spec, token, delay), now, ttl, delay)
      redis.call('HSET', K.d, owner, int(now) .. '|' .. (description or ''))
      if redis.call('PTTL', K.d) < ttl + delay then redis.call('PEXPIRE', K.d, ttl + delay) end
      writeHoldKey(int(token) .. '|s', 'PX', math.max(fenceTtl, ttl + delay, redis.call('PTTL', X)))
      redis.call('ZADD', LISTED, 0, NAME)
      return {1, token, ttl}
    end
  end
end

--- @include "lib"

local name = NAME
local us, now = clock()
-- Shared holds never sit beside an exclusive one: nothing to prune then.
if not readHoldKey() then prune(K.h, now) end

local sample, sampleEnd = sampleHolder(now)
local otherSpec = sample and select(2, parseMember(sample))
if not otherSpec then
  local head = redis.call('ZRANGE', K.q, 0, 0)[1]
  otherSpec = head and parseLineInfo(redis.call('HGET', K.qi, head))
end
if otherSpec then
  local why = conflict(name, spec, otherSpec)
  if why then return {-1, why} end
end

-- The line as this owner sees it, in one read: its own entry (it waits
-- already), the last arrival number and when the line's keys expire (qi
-- exists while q does: forgetEntry).
local line = redis.call('HMGET', K.qi, owner, '~seq', '~exp')
local queued = line[1]

-- Serve the line only when this owner is its (live) head: an attempt of
-- anyone else never grants the name to a head that may be dead (a forced
-- release, or a holder's lease running out, would otherwise hand the name to
-- a killed waiter for its whole ttl); a dead head's entry goes stale within
-- its line ttl and the next attempt drops it.
local promoted = queued and liveHead(now) == owner
if promoted then promote(channelPrefix, us, unit, now, fenceTtl) end

-- Already holding (an earlier run of this very attempt, or a hand-over whose
-- wake-up was lost or is late): the same hold, renewed, never a second one.
local held = holdOf(owner, now)
if held then
  renewHold(held, now, ttl)
  settle()
  local _, _, token = parseMember(held)
  return {1, tonumber(token), ttl}
end

-- A fair attempt never passes a live waiter (stale heads are dropped on the
-- way); the line is looked at only when the name is free for this attempt.
-- A permit never passes a live head that does not fit (weighted permits).
if not queued and fits(mode, permitsOf(spec), mode == 'r' and writerWaiting(), weightOf(spec))
  and (not isFair(spec) or not liveHead(now)) and (mode ~= 'p' or headFits(now, weightOf(spec))) then
  local token = grant(owner, spec, ttl, delay, us, unit, now, fenceTtl, description)
  settle()
  if isExclusive(mode) and noticeWanted(description) then electionNotice(channelPrefix) end
  return {1, token, ttl}
end

-- Not in line, or joined now with nobody before it: the head. One that
-- was in line already asks where it stands.
local waited = queued
local isHead = not waited
if join == '1' then
  local since, seq, staleAt = int(now), tonumber(line[2]) or 0, now + lineTtl
  local counters, expire = {}, false
  if queued then since = select(5, parseLineInfo(queued)) or since end
  -- Writers in line are counted (forgetEntry); its own stale entry may have
  -- been dropped above.
  if mode == 'w' and redis.call('HEXISTS', K.qi, owner) == 0 then redis.call('HINCRBY', K.qi, '~w', 1) end
  -- NX: an entry whose details were lost keeps its place too.
  if redis.call('ZADD', K.q, 'NX', seq + 1, owner) == 1 then
    counters = {'~seq', seq + 1}
    if not waited then isHead = lineDropped or not line[2] end
  end
  -- The line's keys outlive every entry: their expiry is raised, with
  -- slack, only when this entry would outlive it (not on every attempt).
  local expires = not lineDropped and tonumber(line[3])
  if not expires or expires < staleAt then
    expires, expire = staleAt + lineTtl, true
    table.insert(counters, '~exp')
    table.insert(counters, int(expires))
  end
  redis.call('HSET', K.qi, owner, spec .. '|' .. int(ttl) .. '|' .. int(delay) .. '|' .. int(staleAt) .. '|' .. since .. '|' .. (description or ''), unpack(counters))
  if expire then
    for _, key in ipairs({K.q, K.qi}) do redis.call('PEXPIRE', key, expires - now) end
  end
  queued = true
end
settle(queued)
if waited then isHead = redis.call('ZRANK', K.q, owner) == 0 end

-- When to try again without a wake-up. Only the head of the line is timed
-- to the holder's lease end (a dead holder's name is then claimed by one
-- attempt, not by every waiter at once); the others are served by wake-ups
-- and otherwise come back when their line entry needs refreshing.
-- The holder sampled above, unless this attempt's promote changed it.
if promoted then sample, sampleEnd = sampleHolder(now) end
if not sample then
  return {0, isHead and 1 or lineTtl, false, false}
end
local _, _, _, sampleDelay = parseMember(sample)
return {0, isHead and math.max(1, sampleEnd - now) or lineTtl, sample, sampleEnd - sampleDelay}
