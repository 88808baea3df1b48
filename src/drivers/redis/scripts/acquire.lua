--[[
  acquire: one attempt to take a name; if it is busy, optionally wait in line.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] owner
  ARGV[2] spec ("x", "r", "wf", "p5", ... see basics.lua)
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

local owner, spec = ARGV[1], ARGV[2]
local ttl, delay = tonumber(ARGV[3]), tonumber(ARGV[4])
local mode = modeOf(spec)

-- Fast paths: nobody waits, and the name is free (exclusive) or shared by
-- holds of the very same kind and permit count (read, permit).
if isExclusive(mode) then
  if redis.call('EXISTS', KEYS[5], KEYS[1], KEYS[3]) == 0 then
    local token = nextToken(KEYS[2])
    redis.call('SET', KEYS[5], memberOf(owner, spec, token, delay), 'PX', ttl + delay)
    return {1, token, ttl}
  end
elseif redis.call('EXISTS', KEYS[5], KEYS[3]) == 0 then
  local now = storeNow()
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local base = string.gsub(spec, 'f$', '')
  local sameKind = not first[1] or string.gsub(select(2, parseMember(first[1])), 'f$', '') == base
  if sameKind and (not first[1] or tonumber(first[2]) > now)
      and (mode == 'r' or not first[1] or redis.call('ZCARD', KEYS[1]) < tonumber(string.sub(base, 2))) then
    local token = nextToken(KEYS[2], now)
    redis.call('ZADD', KEYS[1], now + ttl + delay, memberOf(owner, spec, token, delay))
    if redis.call('PTTL', KEYS[1]) < ttl + delay then redis.call('PEXPIRE', KEYS[1], ttl + delay) end
    return {1, token, ttl}
  end
end

--- @include "lib"

local lineKey, infoKey = KEYS[3], KEYS[4]
local name = ARGV[8]
local now = storeNow()
prune(KEYS[1], now)

local sample, sampleEnd = sampleHolder(KEYS, now)
local otherSpec = sample and select(2, parseMember(sample))
if not otherSpec then
  local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
  local headInfo = head and redis.call('HGET', infoKey, head)
  otherSpec = headInfo and string.match(headInfo, '^([^|]*)')
end
if otherSpec then
  local why = conflict(name, spec, otherSpec)
  if why then return {-1, why} end
end

local queued = false
if redis.call('EXISTS', lineKey) == 1 then
  promote(KEYS, ARGV[9], now)
  queued = redis.call('ZSCORE', lineKey, owner)
end
if ARGV[7] == '1' then
  -- Served by a hand-over (just now, or earlier with its wake-up lost)?
  local member, left = holdOf(KEYS, owner, now)
  if member then
    local _, _, token = parseMember(member)
    return {1, tonumber(token), math.max(0, left)}
  end
end

local lineEmpty = redis.call('EXISTS', lineKey) == 0
if not queued and (lineEmpty or not isFair(spec)) and fits(KEYS, mode, permitsOf(spec), writerWaiting(infoKey)) then
  local token = grant(KEYS, owner, spec, ttl, delay, now)
  return {1, token, ttl}
end

if ARGV[5] == '1' then
  local lineTtl = tonumber(ARGV[6])
  if not queued then
    local arrival = redis.call('HINCRBY', infoKey, '~seq', 1)
    redis.call('ZADD', lineKey, arrival, owner)
    if isExclusive(mode) then redis.call('HINCRBY', infoKey, '~w', 1) end
  end
  redis.call('HSET', infoKey, owner, spec .. '|' .. int(ttl) .. '|' .. int(delay) .. '|' .. int(now + lineTtl))
  for _, key in ipairs({lineKey, infoKey}) do
    if redis.call('PTTL', key) < lineTtl then redis.call('PEXPIRE', key, lineTtl) end
  end
end

sample, sampleEnd = sampleHolder(KEYS, now)
if not sample then
  -- Free but reserved for the line: the head claims it within its line ttl.
  return {0, 1, false, false}
end
local _, _, _, sampleDelay = parseMember(sample)
return {0, math.max(1, sampleEnd - now), sample, sampleEnd - sampleDelay}
