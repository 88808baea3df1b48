--[[
  The few helpers the fast paths need, kept apart from lib.lua so that a
  script returning early never builds lib's closures (each EVALSHA runs the
  whole chunk from the top).

  Keys of one name (all share the {name} hash tag, see keys.ts), in the order
  every script that takes them all declares them:
    KEYS[1] shared    ZSET   shared holds (read, permit): member, scored by
                             lease end + lock delay (store ms)
    KEYS[2] token     STRING the fencing counter; never expires, only grows
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
]]

local function storeNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Lua 5.1 prints large numbers in exponent form; tokens and times need digits.
local function int(n)
  return string.format('%d', n)
end

local function parseMember(member)
  local owner, spec, token, delay = string.match(member, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  return owner, spec, token, tonumber(delay)
end

local function modeOf(spec)
  return string.sub(spec, 1, 1)
end

local function isExclusive(mode)
  return mode == 'x' or mode == 'w'
end

local function memberOf(owner, spec, token, delay)
  return owner .. '|' .. spec .. '|' .. int(token) .. '|' .. int(delay)
end

-- The next fencing token: one above the last, and never below the store
-- clock x 1000. The clock floor keeps tokens increasing where the counter
-- itself went back: a store restarted empty, or a replica promoted before the
-- last increments reached it (replication is asynchronous). It holds as long
-- as the clocks of old and new master agree to within the failover time and
-- no name averages 1000 grants per ms.
local function nextToken(tokenKey, now)
  local floor = (now or storeNow()) * 1000
  local token = math.max((tonumber(redis.call('GET', tokenKey)) or 0) + 1, floor)
  redis.call('SET', tokenKey, int(token))
  return token
end

-- Drops shared members whose lease and lock delay have both passed.
local function prune(sharedKey, now)
  redis.call('ZREMRANGEBYSCORE', sharedKey, '-inf', now)
end
