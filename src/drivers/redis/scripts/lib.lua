--[[
  Shared helpers, included (after basics.lua) by the scripts that grant or
  hand over.

  Data layout of one name (all keys share the {name} hash tag, see keys.ts):
    holders  ZSET  member "<owner>|<spec>|<token>|<lockDelayMs>"
                   score  the store time (ms) until which the member blocks the
                          name: lease end + lock delay. A member whose score
                          minus its delay has passed is expired; once its score
                          has passed it is gone (pruned).
    token    STRING the fencing counter; never expires, only ever INCRed
                   (seeded from the store clock, see nextToken).
    line     ZSET  owner -> arrival number (order of service)
    lineinfo HASH  owner -> "<spec>|<ttlMs>|<lockDelayMs>|<staleAt>"
                   "~seq" -> last arrival number, "~w" -> writers in line
  <spec> is a mode letter (x exclusive, r read, w write, p permit), the
  permit count, and "f" when fair: "x1", "w1f", "p5".
  Wake-ups go to the waiting client's own channel: <channel prefix><client id>.
]]


local function permitsOf(spec)
  return tonumber(string.match(spec, '^%a(%d+)'))
end

local function isFair(spec)
  return string.sub(spec, -1) == 'f'
end

local KIND = { x = 'mutex', r = 'rwlock', w = 'rwlock', p = 'semaphore' }

-- Why `spec` can never share a name held or awaited as `other`, or nil.
local function conflict(name, spec, other)
  if KIND[modeOf(spec)] ~= KIND[modeOf(other)] then
    return '"' .. name .. '" is in use as a ' .. KIND[modeOf(other)] .. ', not a ' .. KIND[modeOf(spec)] ..
      '; use another name or wait until it is free'
  end
  if modeOf(spec) == 'p' and permitsOf(spec) ~= permitsOf(other) then
    return 'semaphore "' .. name .. '" is in use with ' .. permitsOf(other) .. ' permits, not ' .. permitsOf(spec) ..
      '; a permit count can change only while nobody holds or waits for the name'
  end
  return nil
end

-- Whether a hold of mode `mode` fits next to the current holders. Writers
-- and exclusive holders are alone, so one sampled member tells the rest.
local function fits(holdersKey, mode, permits, writerWaiting)
  local count = redis.call('ZCARD', holdersKey)
  if count == 0 then return mode ~= 'r' or not writerWaiting end
  if mode == 'x' or mode == 'w' then return false end
  if mode == 'p' then return count < permits end
  -- read
  if writerWaiting then return false end
  local sample = redis.call('ZRANGE', holdersKey, 0, 0)[1]
  local _, spec = parseMember(sample)
  return modeOf(spec) == 'r'
end

-- Keeps the holders key alive exactly as long as its longest member.
local function keepUntilLastHolder(holdersKey, now)
  local last = redis.call('ZRANGE', holdersKey, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', holdersKey, math.max(1, tonumber(last[2]) - now)) end
end

local function grant(holdersKey, tokenKey, owner, spec, ttl, delay, now)
  local token = nextToken(tokenKey, now)
  redis.call('ZADD', holdersKey, now + ttl + delay, owner .. '|' .. spec .. '|' .. int(token) .. '|' .. int(delay))
  keepUntilLastHolder(holdersKey, now)
  return token
end

local function clientOf(owner)
  return string.match(owner, '^([^.]*)')
end

local function leaveLine(lineKey, infoKey, owner)
  local info = redis.call('HGET', infoKey, owner)
  if not info then return false end
  redis.call('ZREM', lineKey, owner)
  redis.call('HDEL', infoKey, owner)
  if modeOf(info) == 'w' or modeOf(info) == 'x' then redis.call('HINCRBY', infoKey, '~w', -1) end
  if redis.call('ZCARD', lineKey) == 0 then redis.call('DEL', lineKey, infoKey) end
  return true
end

local function writerWaiting(infoKey)
  return tonumber(redis.call('HGET', infoKey, '~w') or '0') > 0
end

-- Hands the name to the head of the line while the head fits: one writer, or
-- every reader / permit up to the next one that does not fit. Stale heads
-- (their owner stopped refreshing) are dropped on the way. Each new holder is
-- told on its client's channel, so a release wakes exactly who it served.
local function promote(keys, name, channelPrefix, now)
  local holdersKey, tokenKey, lineKey, infoKey = keys[1], keys[2], keys[3], keys[4]
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return end
    local info = redis.call('HGET', infoKey, head)
    local spec, ttl, delay, staleAt = string.match(info or '', '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    if not spec or tonumber(staleAt) <= now then
      if not leaveLine(lineKey, infoKey, head) then redis.call('ZREM', lineKey, head) end
    else
      if not fits(holdersKey, modeOf(spec), permitsOf(spec), false) then return end
      leaveLine(lineKey, infoKey, head)
      local token = grant(holdersKey, tokenKey, head, spec, tonumber(ttl), tonumber(delay), now)
      redis.call('PUBLISH', channelPrefix .. clientOf(head), 'g|' .. head .. '|' .. int(token) .. '|' .. ttl)
    end
  end
end
