--[[
  acquire: one attempt to take a name; if it is busy, optionally wait in line.

  KEYS[1] holders   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo
  ARGV[1] owner
  ARGV[2] spec ("x1", "r1", "w1f", "p5", ... see lib.lua)
  ARGV[3] ttl ms
  ARGV[4] lock delay ms
  ARGV[5] "1" to join (or stay in) the line when busy, else "0"
  ARGV[6] line entry ttl ms: dropped unless refreshed within it
  ARGV[7] "1" when this owner tried before (a hand-over may already be its)
  ARGV[8] lock name (for messages)
  ARGV[9] wake-up channel prefix

  Returns
    {1, token, ttlMs}                            granted
    {0, retryAfterMs, holderMember, holderEnd}   busy (holder fields may be false)
    {-1, detail}                                 conflict: can never succeed as asked
]]
--- @include "basics"

local holdersKey, tokenKey, lineKey, infoKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, spec = ARGV[1], ARGV[2]
local ttl, delay = tonumber(ARGV[3]), tonumber(ARGV[4])
local name = ARGV[8]
local mode = modeOf(spec)
local now = storeNow()

-- The member ending first tells whether anything expired since the last call.
local first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
if first[1] and tonumber(first[2]) <= now then
  prune(holdersKey, now)
  first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
end
local lineExists = redis.call('EXISTS', lineKey) == 1

-- Fast path: nobody holds, nobody waits.
if not first[1] and not lineExists then
  local token = nextToken(tokenKey, now)
  redis.call('ZADD', holdersKey, now + ttl + delay, owner .. '|' .. spec .. '|' .. int(token) .. '|' .. int(delay))
  redis.call('PEXPIRE', holdersKey, ttl + delay)
  return {1, token, ttl}
end

--- @include "lib"

if first[1] then
  local _, otherSpec = parseMember(first[1])
  local why = conflict(name, spec, otherSpec)
  if why then return {-1, why} end
else
  local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
  local headInfo = head and redis.call('HGET', infoKey, head)
  if headInfo then
    local why = conflict(name, spec, string.match(headInfo, '^([^|]*)'))
    if why then return {-1, why} end
  end
end

local queued = false
if lineExists then
  promote(KEYS, name, ARGV[9], now)
  queued = redis.call('ZSCORE', lineKey, owner)
end
if ARGV[7] == '1' then
  -- Served by a hand-over (just now, or earlier with its wake-up lost)?
  local held = redis.call('ZRANGE', holdersKey, 0, -1, 'WITHSCORES')
  for i = 1, #held, 2 do
    if string.sub(held[i], 1, #owner + 1) == owner .. '|' then
      local _, _, token, heldDelay = parseMember(held[i])
      return {1, tonumber(token), math.max(0, tonumber(held[i + 1]) - heldDelay - now)}
    end
  end
end

local lineEmpty = redis.call('EXISTS', lineKey) == 0
if not queued and (lineEmpty or not isFair(spec)) and fits(holdersKey, mode, permitsOf(spec), writerWaiting(infoKey)) then
  local token = grant(holdersKey, tokenKey, owner, spec, ttl, delay, now)
  return {1, token, ttl}
end

if ARGV[5] == '1' then
  local lineTtl = tonumber(ARGV[6])
  if not queued then
    local arrival = redis.call('HINCRBY', infoKey, '~seq', 1)
    redis.call('ZADD', lineKey, arrival, owner)
    if mode == 'w' or mode == 'x' then redis.call('HINCRBY', infoKey, '~w', 1) end
  end
  redis.call('HSET', infoKey, owner, spec .. '|' .. int(ttl) .. '|' .. int(delay) .. '|' .. int(now + lineTtl))
  for _, key in ipairs({lineKey, infoKey}) do
    if redis.call('PTTL', key) < lineTtl then redis.call('PEXPIRE', key, lineTtl) end
  end
end

first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
if not first[1] then
  -- Free but reserved for the line: the head claims it within its line ttl.
  return {0, 1, false, false}
end
local _, _, _, firstDelay = parseMember(first[1])
return {0, math.max(1, tonumber(first[2]) - now), first[1], tonumber(first[2]) - firstDelay}
