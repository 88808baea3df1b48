--[[
  redlock-line: the waiting line of a Redlock name, kept on one node (the
  first node of the URL that answers). Redlock never lets a node hand a name
  over by itself (nobody joins a node's own line), because the lines of N
  nodes need not agree; a release only wakes the head of this one line, and
  the head then asks every node (src/drivers/redlock/).

  KEYS[1] exclusive  KEYS[2] shared  (the node's holds, see basics.lua)
  KEYS[3] line       ZSET  owner -> arrival number
  KEYS[4] lineinfo   HASH  owner -> staleAt (store ms); "~seq" last arrival number
  ARGV[1] op: "join" | "peek" | "leave" | "wake" | "wakeAll" | "list"
  ARGV[2] owner (join, peek, leave)
  ARGV[3] line entry ttl ms (join): dropped unless refreshed within it
  ARGV[4] wake-up channel prefix (wake, wakeAll)

  Returns
    join, peek  {rank, free, length}: live entries ahead of the owner (peek,
                owner not in line: all of them); free is 1 when nobody holds
                the name here; length of the line
    leave       1 if the owner was in line
    wake        1 if the head was told "r|<owner>" on its client's channel
    wakeAll     how many waiters were told; the line is emptied (a forced
                release: live waiters line up again, dead ones are gone)
    list        {owner, ...} in line order, live entries only
]]
--- @include "token"

local op, owner = ARGV[1], ARGV[2]
local lineKey, infoKey = KEYS[3], KEYS[4]
local _, now = clock()

-- Drops heads whose owner stopped refreshing; returns the live head.
local function liveHead()
  while true do
    local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
    if not head then return nil end
    if tonumber(redis.call('HGET', infoKey, head) or '0') > now then return head end
    redis.call('ZREM', lineKey, head)
    redis.call('HDEL', infoKey, head)
  end
end

local function tell(waiter)
  redis.call('PUBLISH', ARGV[4] .. string.match(waiter, '^([^.]*)'), 'r|' .. waiter)
end

local function isFree()
  return redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 and 1 or 0
end

if op == 'join' then
  local ttl = tonumber(ARGV[3])
  liveHead()
  if not redis.call('ZSCORE', lineKey, owner) then
    redis.call('ZADD', lineKey, redis.call('HINCRBY', infoKey, '~seq', 1), owner)
  end
  redis.call('HSET', infoKey, owner, int(now + ttl))
  for _, key in ipairs({lineKey, infoKey}) do
    if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  end
  return {redis.call('ZRANK', lineKey, owner), isFree(), redis.call('ZCARD', lineKey)}
elseif op == 'peek' then
  liveHead()
  local length = redis.call('ZCARD', lineKey)
  return {redis.call('ZRANK', lineKey, owner) or length, isFree(), length}
elseif op == 'leave' then
  local left = redis.call('ZREM', lineKey, owner)
  redis.call('HDEL', infoKey, owner)
  if redis.call('ZCARD', lineKey) == 0 then redis.call('DEL', lineKey, infoKey) end
  return left
elseif op == 'wake' then
  local head = liveHead()
  if not head then return 0 end
  tell(head)
  return 1
end

-- wakeAll, list: every live entry, in order.
liveHead()
local live = {}
for _, waiter in ipairs(redis.call('ZRANGE', lineKey, 0, -1)) do
  if tonumber(redis.call('HGET', infoKey, waiter) or '0') > now then table.insert(live, waiter) end
end
if op == 'wakeAll' then
  for _, waiter in ipairs(live) do tell(waiter) end
  redis.call('DEL', lineKey, infoKey)
  return #live
end
return live
