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
local function sampleHolder(now)
  local exclusive = readHoldKey()
  if exclusive then return exclusive, now + redis.call('PTTL', X) end
  local first = redis.call('ZRANGE', K.h, 0, 0, 'WITHSCORES')
  if first[1] then return first[1], tonumber(first[2]) end
  return nil, nil
end

-- Whether a hold of `mode` fits next to the current holders, counting holds
-- in their lock delay as holders of their own slot (an expired writer
-- blocks everyone, an expired reader blocks writers, an expired permit keeps
-- its permit). An exclusive holder is alone; shared holds are all of one kind.
-- `noShared`: the script knows h is empty (it just ended an exclusive hold,
-- and shared holds never sit beside one) until it grants a shared hold.
local noShared = false

-- A permit of `weight` fits while the holds' weights leave that many free.
local function fits(mode, permits, writerWaiting, weight)
  if readHoldKey() then return false end
  if mode == 'p' then return (noShared and 0 or weightHeld(permits)) + (weight or 1) <= permits end
  local count = noShared and 0 or redis.call('ZCARD', K.h)
  if isExclusive(mode) then return count == 0 end
  return not writerWaiting
end

-- Shared holds' since and description, beside h and living as long.
local function describeShared(owner, now, description, ttl)
  redis.call('HSET', K.d, owner, int(now) .. '|' .. (description or ''))
  if redis.call('PTTL', K.d) < ttl then redis.call('PEXPIRE', K.d, ttl) end
end

-- Grants `owner` the name now (the caller checked that it fits); its token.
local function grant(owner, spec, ttl, delay, us, unit, now, fenceTtl, description)
  local token = drawToken(us, unit)
  local member = memberOf(owner, spec, token, delay)
  if isExclusive(modeOf(spec)) then
    writeHoldKey(heldValue(member, 's', int(now), description), 'PX', ttl + delay)
  else
    noShared = false
    renewShared(K.h, member, now, ttl, delay)
    describeShared(owner, now, description, ttl + delay)
    -- The counter lives at least as long as the shared holds it fenced.
    local keep = math.max(fenceTtl, ttl + delay, redis.call('PTTL', X))
    writeHoldKey(int(token) .. '|s', 'PX', keep)
  end
  return token
end

-- The live (not expired) hold of `owner`, if it has one: member, and ms of
-- lease left. A hold in its lock delay is no longer the owner's.
local function holdOf(owner, now)
  local prefix = owner .. '|'
  local exclusive = readHoldKey()
  if exclusive and string.sub(exclusive, 1, #prefix) == prefix then
    local _, _, _, delay = parseMember(exclusive)
    local left = redis.call('PTTL', X) - delay
    if left > 0 then return exclusive, left end
    return nil, 0
  end
  if exclusive then return nil, 0 end
  local member, score = sharedHoldOf(K.h, owner)
  if member then
    local _, _, _, delay = parseMember(member)
    local left = score - delay - now
    if left > 0 then return member, left end
  end
  return nil, 0
end

-- Sets the owner's hold found by holdOf to a fresh lease of `ttl`.
local function renewHold(member, now, ttl)
  local _, spec, _, delay = parseMember(member)
  if isExclusive(modeOf(spec)) then
    redis.call('PEXPIRE', X, ttl + delay)
  else
    renewShared(K.h, member, now, ttl, delay)
  end
end

-- Ends a hold given by its member; 1 if it was there. The counter stays.
local function dropHold(member, fenceTtl)
  local owner, spec, token = parseMember(member)
  if isExclusive(modeOf(spec)) then
    if readHoldKey() == member then
      freeHoldKey(tonumber(token), fenceTtl)
      return 1
    end
    return 0
  end
  local dropped = redis.call('ZREM', K.h, member)
  if dropped == 1 then redis.call('HDEL', K.d, owner) end
  return dropped
end

-- Whether this script deleted the line's keys (joinLine then sets their
-- expiry again: the ~exp it read is gone with them).
local lineDropped = false

-- Forgets a line entry already taken out of q (or never in it): its
-- details, and both keys once q is empty, so that qi exists while q does.
-- Only writers (w) are counted in ~w: readers wait behind them, and a
-- mutex (x) has no readers.
local function forgetEntry(owner, info)
  if info then
    redis.call('HDEL', K.qi, owner)
    if modeOf(info) == 'w' then redis.call('HINCRBY', K.qi, '~w', -1) end
  end
  if redis.call('ZCARD', K.q) == 0 then
    redis.call('DEL', K.q, K.qi)
    lineDropped = true
  end
end

-- Takes `owner` out of the line; `info` is its lineinfo entry when the
-- caller already read it.
local function leaveLine(owner, info)
  info = info or redis.call('HGET', K.qi, owner)
  if not info then return false end
  redis.call('ZREM', K.q, owner)
  forgetEntry(owner, info)
  return true
end

local function writerWaiting()
  return tonumber(redis.call('HGET', K.qi, '~w') or '0') > 0
end

-- Drops stale heads (their owner stopped refreshing); the live head or nil.
local function liveHead(now)
  while true do
    local head = redis.call('ZRANGE', K.q, 0, 0)[1]
    if not head then return nil end
    local info = redis.call('HGET', K.qi, head)
    local spec, _, _, staleAt = parseLineInfo(info)
    if spec and staleAt > now then return head end
    redis.call('ZREM', K.q, head)
    forgetEntry(head, info)
  end
end

-- Hands the name to the head of the line while the head fits: one writer, or
-- every reader / permit up to the next one that does not fit. Stale heads
-- (their owner stopped refreshing) are dropped on the way. Each new holder is
-- told on its client's channel, so a release wakes exactly who it served.
-- True when it granted an exclusive hold (the line it came from may go on).
-- The head is popped, and put back (same score) in the rare case it does
-- not fit: one call instead of a read and a removal.
local function promote(channelPrefix, us, unit, now, fenceTtl)
  while true do
    local popped = redis.call('ZPOPMIN', K.q)
    local head = popped[1]
    if not head then return false end
    local info = redis.call('HGET', K.qi, head)
    local spec, ttl, delay, staleAt, _, description = parseLineInfo(info)
    if not spec or staleAt <= now then
      forgetEntry(head, info)
    else
      if not fits(modeOf(spec), permitsOf(spec), false, weightOf(spec)) then
        redis.call('ZADD', K.q, popped[2], head)
        return false
      end
      forgetEntry(head, info)
      local token = grant(head, spec, ttl, delay, us, unit, now, fenceTtl, description)
      wake(channelPrefix, head, 'g|' .. head .. '|' .. int(token) .. '|' .. int(ttl))
      if isExclusive(modeOf(spec)) and noticeWanted(description) then electionNotice(channelPrefix) end
      -- Nothing fits next to an exclusive holder.
      if isExclusive(modeOf(spec)) then return true end
    end
  end
end

-- Weighted permits: whether the live head of the line still fits once a
-- newcomer of `weight` is granted. A newcomer of a non-fair semaphore may
-- not take what the head waits for (for as long as light ones come), nor
-- the room a head that fits has not come back for yet (a holder expired,
-- the head's next attempt is on its way): the memory store serves that
-- head first; here the newcomer takes only what the head leaves.
local function headFits(now, weight)
  local head = liveHead(now)
  if not head then return true end
  local spec = parseLineInfo(redis.call('HGET', K.qi, head))
  return fits(modeOf(spec), permitsOf(spec), false, weightOf(spec) + weight)
end

-- The type each key of a name must have.
local KEY_TYPES = {
  { K.h, 'zset', 'shared holds' }, { K.d, 'hash', 'shared hold details' }, { K.t, 'string', 'fencing counter' },
  { K.q, 'zset', 'line' }, { K.qi, 'hash', 'line details' }, { X, 'string', 'hold key' },
}

-- Fails with FOREIGN when a key of the name is of a type baton never writes.
local function checkTypes()
  for _, each in ipairs(KEY_TYPES) do
    local actual = redis.call('TYPE', each[1]).ok
    if actual ~= 'none' and actual ~= each[2] then foreign(each[3] .. ' key is a ' .. actual) end
  end
end

-- Deletes what baton did not write under the keys of a name; the count.
local function clearForeign()
  local dropped = 0
  for _, each in ipairs(KEY_TYPES) do
    local actual = redis.call('TYPE', each[1]).ok
    if actual ~= 'none' and actual ~= each[2] then dropped = dropped + redis.call('DEL', each[1]) end
  end
  holdRead = false
  if not pcall(readHoldKey) then
    dropped = dropped + redis.call('DEL', X)
    seedHoldKey(nil)
  end
  local counter = redis.call('GET', K.t)
  if counter and not tonumber(counter) then dropped = dropped + redis.call('DEL', K.t) end
  for _, member in ipairs(redis.call('ZRANGE', K.h, 0, -1)) do
    if not pcall(parseMember, member) then dropped = dropped + redis.call('ZREM', K.h, member) end
  end
  for _, waiter in ipairs(redis.call('ZRANGE', K.q, 0, -1)) do
    if not parseLineInfo(redis.call('HGET', K.qi, waiter)) then
      return dropped + redis.call('DEL', K.q, K.qi)
    end
  end
  return dropped
end
