--[[
  The helpers every path past the fast ones needs: the store clock, token
  arithmetic, the hold key's value formats (see basics.lua).
]]

-- A key of a name holds something baton did not write: the client turns
-- this reply into a BatonError; forceRelease clears such keys.
local function foreign(what)
  error({ err = 'FOREIGN ' .. what })
end

-- Store clock: microseconds and milliseconds.
local function clock()
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000)
end

-- Lua 5.1 prints large numbers in exponent form; tokens and times need digits.
local function int(n)
  return string.format('%d', n)
end

-- The hold key's value while free: "<counter>|<flag>" (see basics.lua).
local function freeCounter(value)
  return string.match(value, '^(%d+)|([-s])$')
end

-- The hold key's value while held: the member, then "|<flag>|<since>|<description>"
-- (`since`: store ms, as digits).
local function heldValue(member, flag, since, description)
  return member .. '|' .. flag .. '|' .. since .. '|' .. (description or '')
end

-- The next fencing token after `last`: one above it, and never below the
-- store clock in µs floored to `unit`. The clock floor keeps tokens
-- increasing where the counter itself went back or is gone: a store
-- restarted empty, a replica promoted before the last writes reached it
-- (replication is asynchronous), or a counter that expired (bounded state,
-- `fenceTtl`). It holds as long as the clocks of old and new master agree to
-- within the failover time and no name averages one grant per microsecond.
-- Redlock nodes pass unit 1000 (whole ms, still in µs) so that N nodes draw
-- equal tokens in the common case.
local function nextToken(last, us, unit)
  us = us - us % unit
  if last and last >= us then return last + 1 end
  return us
end

local function memberOf(owner, spec, token, delay)
  return owner .. '|' .. spec .. '|' .. int(token) .. '|' .. int(delay)
end
