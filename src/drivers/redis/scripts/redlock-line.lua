--[[
  redlock-line: the waiting line of a Redlock name, kept on one node (the
  first node of the URL that answers). Redlock never lets a node hand a name
  over by itself (nobody joins a node's own line), because the lines of N
  nodes need not agree; a release only wakes the head of this one line, and
  the head then asks every node (src/drivers/redlock/).

  The line only orders waiters (liveness); it never decides who may hold:
  that is the majority of the nodes' own hold scripts. For a read-write lock
  it also holds readers back behind a waiting writer: a reader yields while a
  writer waits ahead of it ("ahead" below), so a stream of readers can not
  starve a writer.

  KEYS[1] the name's base key "<prefix>:{<name>}:"; the node's holds are
          its x and h keys (see basics.lua), and the line is kept in
    rq     ZSET  owner -> arrival number
    rqi    HASH  owner -> staleAt (store ms); "<owner>|m" -> its
                     mode (r or w; absent: x, a mutex); "~seq" last arrival
                     number. Owners never contain '|'. The mode has a field
                     of its own so that clients of the previous version,
                     which read staleAt as a number, keep working beside
                     this one
  ARGV[1] op: "join" | "peek" | "leave" | "release" | "wake" | "wakeAll" | "list"
  ARGV[2] owner (join, peek, leave); the hold's member (release)
  ARGV[3] line entry ttl ms (join): dropped unless refreshed within it;
          release: "1" when the member's token is a guess: if it does not
          match, the hold of the member's owner is ended whatever its token
  ARGV[4] wake-up channel prefix (release, wake, wakeAll, leave)
  ARGV[5] the owner's mode letter (join, peek): x, r or w
  ARGV[6] fence ttl ms (release): how long the hold key keeps the counter
  ARGV[7] join: the owner's description (who asks, for inspect), or ""; it is
          kept in rqi as "<owner>|d", with "<owner>|s" the store ms it joined

  Returns
    join, peek  {ahead, free, length}
                ahead: live entries ahead of the owner that it must let go
                first: all of them for a writer or mutex (its rank), the
                writers among them for a reader (counted up to 1); for an
                owner not in line, the whole line is ahead
                free: 1 when the line node holds nothing that blocks the
                owner's mode (a reader: no exclusive hold; else no hold)
                length: of the line
    leave       1 if the owner was in line
    release     1 if the member held the name here; then, only if someone
                waits, wakes the head (see wakeHead): a release with nobody in
                line costs this one call on the line node
    wake        how many waiters were told (see wakeHead)
    wakeAll     how many waiters were told; the line is emptied (a forced
                release: live waiters line up again, dead ones are gone)
    list        {owner, mode, ...} in line order, live entries only
]]
--- @include "keys"

local op, owner = ARGV[1], ARGV[2]
-- The exclusive release with nobody in line, the common case: as release.lua.
if op == 'release' then
  local value = redis.call('GET', X)
  if value and string.sub(value, 1, #owner + 2) == owner .. '|-' and redis.call('EXISTS', base .. 'rq') == 0 then
    redis.call('SET', X, string.match(owner, '|(%d+)|%d+$') .. '|-', 'PX', ARGV[6])
    return 1
  end
end

--- @include "token"
--- @include "basics"

local lineKey, infoKey = base .. 'rq', base .. 'rqi'
-- Store ms; read only where the line is looked at (a release with nobody in
-- line, the common case, needs no TIME).
local now = 0
if op ~= 'release' and op ~= 'leave' then now = select(2, clock()) end

local function live(waiter)
  local info = redis.call('HMGET', infoKey, waiter, waiter .. '|m')
  return (tonumber(info[1]) or 0) > now, info[2] or 'x'
end

local function forget(waiter)
  redis.call('ZREM', lineKey, waiter)
  redis.call('HDEL', infoKey, waiter, waiter .. '|m', waiter .. '|d', waiter .. '|s')
end

-- Drops heads whose owner stopped refreshing; returns the live head and its mode.
local function liveHead()
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return nil end
    local alive, mode = live(head)
    if alive then return head, mode end
    forget(head)
  end
end

local function tell(waiter)
  redis.call('PUBLISH', ARGV[4] .. string.match(waiter, '^([^.]*)'), 'r|' .. waiter)
end

-- Live shared holds (readers, or readers in their lock delay) on this node.
local function sharedHeld()
  return redis.call('ZCOUNT', K.h, '(' .. int(now), '+inf') > 0
end

local function freeFor(mode)
  if readHoldKey() then return 0 end
  if mode == 'r' or not sharedHeld() then return 1 end
  return 0
end

-- Live writers (or mutex waiters) among the first `count` entries (all when
-- count is nil): 0, or 1 as soon as one is found. Scans only the readers
-- before the first writer, so it is short whenever a writer waits.
local function writerAmong(count)
  local from = 0
  while true do
    local to = from + 63
    if count and to > count - 1 then to = count - 1 end
    if to < from then return 0 end
    local page = redis.call('ZRANGE', lineKey, from, to)
    if not page[1] then return 0 end
    for _, waiter in ipairs(page) do
      local alive, mode = live(waiter)
      if alive and mode ~= 'r' then return 1 end
    end
    from = to + 1
  end
end

local function placeOf(mode)
  local length = redis.call('ZCARD', lineKey)
  local rank = redis.call('ZRANK', lineKey, owner)
  local ahead
  if mode == 'r' then
    if rank == 0 or length == 0 then ahead = 0 else ahead = writerAmong(rank) end
  else
    ahead = rank or length
  end
  return {ahead, freeFor(mode), length}
end

-- Tells the head to try again; a reader head comes with every reader behind
-- it up to the first writer (they may all hold at once). A writer head is
-- not told while readers still hold here: it could not get this node, and
-- the last reader's release tells it.
local function wakeHead()
  local head, mode = liveHead()
  if not head then return 0 end
  if mode ~= 'r' then
    if sharedHeld() then return 0 end
    tell(head)
    return 1
  end
  local told = 0
  local from = 0
  while true do
    local page = redis.call('ZRANGE', lineKey, from, from + 63)
    if not page[1] then return told end
    for _, waiter in ipairs(page) do
      local alive, m = live(waiter)
      if alive then
        if m ~= 'r' then return told end
        tell(waiter)
        told = told + 1
      end
    end
    from = from + 64
  end
end

if op == 'join' then
  local ttl = tonumber(ARGV[3])
  local mode = ARGV[5]
  liveHead()
  if not redis.call('ZSCORE', lineKey, owner) then
    redis.call('ZADD', lineKey, redis.call('HINCRBY', infoKey, '~seq', 1), owner)
    redis.call('HSET', infoKey, owner .. '|s', int(now))
    if ARGV[7] and ARGV[7] ~= '' then redis.call('HSET', infoKey, owner .. '|d', ARGV[7]) end
  end
  redis.call('HSET', infoKey, owner, int(now + ttl))
  if mode ~= 'x' then redis.call('HSET', infoKey, owner .. '|m', mode) end
  for _, key in ipairs({lineKey, infoKey}) do
    if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  end
  return placeOf(mode)
elseif op == 'peek' then
  liveHead()
  return placeOf(ARGV[5])
elseif op == 'leave' then
  local left = redis.call('ZREM', lineKey, owner)
  redis.call('HDEL', infoKey, owner, owner .. '|m', owner .. '|d', owner .. '|s')
  if redis.call('ZCARD', lineKey) == 0 then redis.call('DEL', lineKey, infoKey) end
  return left
elseif op == 'release' then
  -- The member of an exclusive hold (mutex, write) or a read hold; a write
  -- member also ends the read hold a downgrade made of it (the two crossed).
  local released = 0
  local fenceTtl = tonumber(ARGV[6])
  local mode = string.match(owner, '^[^|]*|(%a)')
  local held, counter = readHoldKey()
  if mode == 'r' then
    released = redis.call('ZREM', K.h, owner)
  elseif held == owner then
    freeHoldKey(counter, fenceTtl)
    released = 1
  elseif mode == 'w' then
    released = redis.call('ZREM', K.h, (string.gsub(owner, '^([^|]*)|w', '%1|r')))
  end
  if released == 0 and ARGV[3] == '1' then
    -- The token was a guess: the owner's hold, whatever its token.
    local prefix = string.match(owner, '^[^|]*|')
    if held and string.sub(held, 1, #prefix) == prefix then
      freeHoldKey(counter, fenceTtl)
      released = 1
    else
      local pattern = string.gsub(prefix, '[%*%?%[%]\\]', '\\%0') .. '*'
      local cursor = '0'
      repeat
        local page = redis.call('ZSCAN', K.h, cursor, 'MATCH', pattern, 'COUNT', 1000)
        cursor = page[1]
        if page[2][1] then
          released = redis.call('ZREM', K.h, page[2][1])
          break
        end
      until cursor == '0'
    end
  end
  if redis.call('EXISTS', lineKey) == 1 then
    now = select(2, clock())
    wakeHead()
  end
  settle()
  return released
elseif op == 'wake' then
  return wakeHead()
end

-- wakeAll, list: every live entry, in order.
liveHead()
local entries = {}
for _, waiter in ipairs(redis.call('ZRANGE', lineKey, 0, -1)) do
  local alive, mode = live(waiter)
  if alive then
    table.insert(entries, waiter)
    if op == 'list' then
      local who = redis.call('HMGET', infoKey, waiter .. '|d', waiter .. '|s')
      table.insert(entries, mode)
      table.insert(entries, who[1] or '')
      table.insert(entries, who[2] or '')
    end
  end
end
if op == 'wakeAll' then
  for _, waiter in ipairs(entries) do tell(waiter) end
  redis.call('DEL', lineKey, infoKey)
  return #entries
end
return entries
