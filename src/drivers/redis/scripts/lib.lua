--[[
  Shared helpers, included after basics.lua (which describes the keys) by
  the scripts that grant, hand over or report.
]]

local function permitsOf(spec)
  return tonumber(string.match(spec, '^%a(%d+)')) or 1
end

local function isFair(spec)
  return string.sub(spec, -1) == 'f'
end

-- The read member a write member becomes when downgraded.
local function readMemberOf(member)
  local owner, spec, token, delay = parseMember(member)
  return memberOf(owner, 'r' .. string.sub(spec, 2), token, delay)
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

-- Whether a hold of `mode` fits next to the current holders, counting holds
-- in their lock delay as holders of their own slot (an expired writer
-- blocks everyone, an expired reader blocks writers, an expired permit keeps
-- its permit). An exclusive holder is alone; shared holders are all of one kind.
local function fits(keys, mode, permits, writerWaiting)
  if redis.call('EXISTS', keys[5]) == 1 then return false end
  local count = redis.call('ZCARD', keys[1])
  if isExclusive(mode) then return count == 0 end
  if mode == 'p' then return count < permits end
  return not writerWaiting
end

local function grant(keys, owner, spec, ttl, delay, us, now, fenceTtl)
  local token = nextToken(keys[2], us, fenceTtl)
  local member = memberOf(owner, spec, token, delay)
  if isExclusive(modeOf(spec)) then
    redis.call('SET', keys[5], member, 'PX', ttl + delay)
  else
    renewShared(keys[1], member, now, ttl, delay)
  end
  return token
end

-- The live (not expired) hold of `owner`, if it has one: member, and ms of
-- lease left. A hold in its lock delay is no longer the owner's.
local function holdOf(keys, owner, now)
  local prefix = owner .. '|'
  local exclusive = redis.call('GET', keys[5])
  if exclusive and string.sub(exclusive, 1, #prefix) == prefix then
    local _, _, _, delay = parseMember(exclusive)
    local left = redis.call('PTTL', keys[5]) - delay
    if left > 0 then return exclusive, left end
    return nil, 0
  end
  if exclusive then return nil, 0 end
  local member, score = sharedHoldOf(keys[1], owner)
  if member then
    local _, _, _, delay = parseMember(member)
    local left = score - delay - now
    if left > 0 then return member, left end
  end
  return nil, 0
end

-- Sets the owner's hold found by holdOf to a fresh lease of `ttl`.
local function renewHold(keys, member, now, ttl)
  local _, spec, _, delay = parseMember(member)
  if isExclusive(modeOf(spec)) then
    redis.call('PEXPIRE', keys[5], ttl + delay)
  else
    renewShared(keys[1], member, now, ttl, delay)
  end
end

local function dropHold(keys, member)
  if isExclusive(modeOf(select(2, parseMember(member)))) then
    if redis.call('GET', keys[5]) == member then return redis.call('DEL', keys[5]) end
    return 0
  end
  return redis.call('ZREM', keys[1], member)
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

local function parseLineInfo(info)
  local spec, ttl, delay, staleAt = string.match(info or '', '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  return spec, tonumber(ttl), tonumber(delay), tonumber(staleAt)
end

-- Drops stale heads (their owner stopped refreshing); the live head or nil.
local function liveHead(lineKey, infoKey, now)
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return nil end
    local info = redis.call('HGET', infoKey, head)
    local spec, _, _, staleAt = parseLineInfo(info)
    if spec and staleAt > now then return head end
    if not leaveLine(lineKey, infoKey, head, info) then redis.call('ZREM', lineKey, head) end
  end
end

-- Hands the name to the head of the line while the head fits: one writer, or
-- every reader / permit up to the next one that does not fit. Stale heads
-- (their owner stopped refreshing) are dropped on the way. Each new holder is
-- told on its client's channel, so a release wakes exactly who it served.
local function promote(keys, channelPrefix, us, now, fenceTtl)
  local lineKey, infoKey = keys[3], keys[4]
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return end
    local info = redis.call('HGET', infoKey, head)
    local spec, ttl, delay, staleAt = parseLineInfo(info)
    if not spec or staleAt <= now then
      if not leaveLine(lineKey, infoKey, head, info) then redis.call('ZREM', lineKey, head) end
    else
      if not fits(keys, modeOf(spec), permitsOf(spec), false) then return end
      leaveLine(lineKey, infoKey, head, info)
      local token = grant(keys, head, spec, ttl, delay, us, now, fenceTtl)
      wake(channelPrefix, head, 'g|' .. head .. '|' .. int(token) .. '|' .. int(ttl))
      -- Nothing fits next to an exclusive holder.
      if isExclusive(modeOf(spec)) then return end
    end
  end
end

-- The type each key of a name must have, in KEYS order.
local KEY_TYPES = { 'zset', 'string', 'zset', 'hash', 'string' }
local KEY_ROLES = { 'shared holds', 'fencing counter', 'line', 'line details', 'exclusive hold' }

-- Fails with FOREIGN when a key of the name is of a type baton never writes.
local function checkTypes(keys)
  for i, expected in ipairs(KEY_TYPES) do
    local actual = redis.call('TYPE', keys[i]).ok
    if actual ~= 'none' and actual ~= expected then foreign(KEY_ROLES[i] .. ' key is a ' .. actual) end
  end
end

-- Deletes what baton did not write under the keys of a name; the count.
local function clearForeign(keys)
  local dropped = 0
  for i, expected in ipairs(KEY_TYPES) do
    local actual = redis.call('TYPE', keys[i]).ok
    if actual ~= 'none' and actual ~= expected then dropped = dropped + redis.call('DEL', keys[i]) end
  end
  local exclusive = redis.call('GET', keys[5])
  if exclusive and not pcall(parseMember, exclusive) then dropped = dropped + redis.call('DEL', keys[5]) end
  local counter = redis.call('GET', keys[2])
  if counter and not tonumber(counter) then dropped = dropped + redis.call('DEL', keys[2]) end
  for _, member in ipairs(redis.call('ZRANGE', keys[1], 0, -1)) do
    if not pcall(parseMember, member) then dropped = dropped + redis.call('ZREM', keys[1], member) end
  end
  for _, waiter in ipairs(redis.call('ZRANGE', keys[3], 0, -1)) do
    if not parseLineInfo(redis.call('HGET', keys[4], waiter)) then
      return dropped + redis.call('DEL', keys[3], keys[4])
    end
  end
  return dropped
end
