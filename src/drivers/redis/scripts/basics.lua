--[[
  The few helpers the fast paths need, kept apart from lib.lua so that a
  script returning early never builds lib's closures (each EVALSHA runs the
  whole chunk from the top).

  Keys of one name (all share the {name} hash tag, see keys.ts), in the order
  every script that takes them all declares them:
    KEYS[1] shared    ZSET   shared holds (read, permit): member, scored by
                             lease end + lock delay (store ms)
    KEYS[2] token     STRING the fencing counter; expires fenceTtl after the
                             name's last grant (see nextToken)
    KEYS[3] line      ZSET   owner -> arrival number (order of service)
    KEYS[4] lineinfo  HASH   owner -> "<spec>|<ttlMs>|<lockDelayMs>|<staleAt>";
                             "~seq" last arrival number, "~w" writers in line
    KEYS[5] exclusive STRING the exclusive hold (mutex, write): member, with
                             PX = lease + lock delay
  A member is "<owner>|<spec>|<token>|<lockDelayMs>". It is expired once less
  than its lock delay is left, and gone (pruned, or expired by Redis) after.
  <spec> is a mode letter (x exclusive, r read, w write, p permit), the
  permit count for a semaphore, and "f" when fair: "x", "wf", "p5".
  Exclusive and shared holds never coexist: a name has one kind at a time.

  Every script is idempotent for an owner: running an attempt twice (a reply
  lost and the command re-sent) finds the owner's hold or line entry and
  answers as the first run did; it never makes a second one.
]]

local function parseMember(member)
  local owner, spec, token, delay = string.match(member, '^([^|]*)|(%a%d*f?)|(%d+)|(%d+)$')
  if not owner then foreign('hold "' .. string.sub(member, 1, 40) .. '"') end
  return owner, spec, token, tonumber(delay)
end

local function modeOf(spec)
  return string.sub(spec, 1, 1)
end

local function isExclusive(mode)
  return mode == 'x' or mode == 'w'
end

-- The owner's shared hold (member, score), found by its owner prefix.
local function sharedHoldOf(sharedKey, owner)
  local pattern = string.gsub(owner, '[%*%?%[%]\\]', '\\%0') .. '|*'
  local cursor = '0'
  repeat
    local page = redis.call('ZSCAN', sharedKey, cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    if page[2][1] then return page[2][1], tonumber(page[2][2]) end
  until cursor == '0'
  return nil, nil
end

-- Renews the owner's shared hold to `ttl` from now; the key lives as long
-- as its longest member.
local function renewShared(sharedKey, member, now, ttl, delay)
  local ends = now + ttl + delay
  redis.call('ZADD', sharedKey, ends, member)
  if redis.call('PTTL', sharedKey) < ends - now then redis.call('PEXPIRE', sharedKey, ends - now) end
end

-- Drops shared members whose lease and lock delay have both passed.
local function prune(sharedKey, now)
  redis.call('ZREMRANGEBYSCORE', sharedKey, '-inf', now)
end

-- The wake-up channel of the client of `owner` (owners are "<client>.<id>").
-- A prefix with a {hash tag} is a sharded channel of the name's slot (Redis
-- Cluster >= 7): SPUBLISH reaches only that shard, not every node.
local function wake(channelPrefix, owner, message)
  local command = string.find(channelPrefix, '{', 1, true) and 'SPUBLISH' or 'PUBLISH'
  redis.call(command, channelPrefix .. string.match(owner, '^([^.]*)'), message)
end
