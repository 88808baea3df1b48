--[[
  The few helpers the fast paths need, kept apart from lib.lua so that a
  script returning early never builds lib's closures (each EVALSHA runs the
  whole chunk from the top). Layout of the keys: see lib.lua.
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

-- A new counter (new name, or a store restarted empty) jumps to the store
-- clock x 1000, above every token granted before, as long as the clock did
-- not go back and the name averaged under 1000 grants per ms.
local function nextToken(tokenKey, now)
  local token = redis.call('INCR', tokenKey)
  if token == 1 then
    token = now * 1000 + 1
    redis.call('SET', tokenKey, int(token))
  end
  return token
end

-- Drops members whose lease and lock delay have both passed.
local function prune(holdersKey, now)
  redis.call('ZREMRANGEBYSCORE', holdersKey, '-inf', now)
end
