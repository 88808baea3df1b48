--[[
  Shared helpers, included after basics.lua (which describes the keys) by
  the scripts that grant, hand over or report.
  Wake-ups go to the waiting client's own channel: <channel prefix><client id>.
]]

local function permitsOf(spec)
  return tonumber(string.match(spec, '^%a(%d+)')) or 1
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

-- One current holder (the exclusive one, else the shared one ending first):
-- its member and the store time until which it blocks the name, or nil.
local function sampleHolder(keys, now)
  local exclusive = redis.call('GET', keys[5])
  if exclusive then return exclusive, now + redis.call('PTTL', keys[5]) end
  local first = redis.call('ZRANGE', keys[1], 0, 0, 'WITHSCORES')
  if first[1] then return first[1], tonumber(first[2]) end
  return nil, nil
end

-- Whether a hold of `mode` fits next to the current holders. An exclusive
-- holder is alone; shared holders of a name are all of one kind.
local function fits(keys, mode, permits, writerWaiting)
  if redis.call('EXISTS', keys[5]) == 1 then return false end
  local count = redis.call('ZCARD', keys[1])
  if isExclusive(mode) then return count == 0 end
  if mode == 'p' then return count < permits end
  return not writerWaiting
end

local function grant(keys, owner, spec, ttl, delay, now)
  local token = nextToken(keys[2], now)
  local member = memberOf(owner, spec, token, delay)
  if isExclusive(modeOf(spec)) then
    redis.call('SET', keys[5], member, 'PX', ttl + delay)
  else
    redis.call('ZADD', keys[1], now + ttl + delay, member)
    -- The key lives exactly as long as its longest member.
    local last = redis.call('ZRANGE', keys[1], -1, -1, 'WITHSCORES')
    redis.call('PEXPIRE', keys[1], math.max(1, tonumber(last[2]) - now))
  end
  return token
end

-- The hold of `owner`, if it has one: member, and ms of lease left.
local function holdOf(keys, owner, now)
  local prefix = owner .. '|'
  local exclusive = redis.call('GET', keys[5])
  if exclusive and string.sub(exclusive, 1, #prefix) == prefix then
    local _, _, _, delay = parseMember(exclusive)
    return exclusive, redis.call('PTTL', keys[5]) - delay
  end
  local held = redis.call('ZRANGE', keys[1], 0, -1, 'WITHSCORES')
  for i = 1, #held, 2 do
    if string.sub(held[i], 1, #prefix) == prefix then
      local _, _, _, delay = parseMember(held[i])
      return held[i], tonumber(held[i + 1]) - delay - now
    end
  end
  return nil, 0
end

local function dropHold(keys, member)
  if isExclusive(modeOf(select(2, parseMember(member)))) then
    if redis.call('GET', keys[5]) == member then return redis.call('DEL', keys[5]) end
    return 0
  end
  return redis.call('ZREM', keys[1], member)
end

local function clientOf(owner)
  return string.match(owner, '^([^.]*)')
end

-- Takes `owner` out of the line; `info` is its lineinfo entry when the
-- caller already read it.
local function leaveLine(lineKey, infoKey, owner, info)
  info = info or redis.call('HGET', infoKey, owner)
  if not info then return false end
  redis.call('ZREM', lineKey, owner)
  redis.call('HDEL', infoKey, owner)
  if isExclusive(modeOf(info)) then redis.call('HINCRBY', infoKey, '~w', -1) end
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
local function promote(keys, channelPrefix, now)
  local lineKey, infoKey = keys[3], keys[4]
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return end
    local info = redis.call('HGET', infoKey, head)
    local spec, ttl, delay, staleAt = string.match(info or '', '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    if not spec or tonumber(staleAt) <= now then
      if not leaveLine(lineKey, infoKey, head, info) then redis.call('ZREM', lineKey, head) end
    else
      if not fits(keys, modeOf(spec), permitsOf(spec), false) then return end
      leaveLine(lineKey, infoKey, head, info)
      local token = grant(keys, head, spec, tonumber(ttl), tonumber(delay), now)
      redis.call('PUBLISH', channelPrefix .. clientOf(head), 'g|' .. head .. '|' .. int(token) .. '|' .. ttl)
      -- Nothing fits next to an exclusive holder.
      if isExclusive(modeOf(spec)) then return end
    end
  end
end
