--[[
  The helpers every path past the fast ones needs: the store clock, token
  arithmetic, the formats of the hold key's value, members and line entries
  (see basics.lua). inspect.lua needs only these.
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

-- A member "<owner>|<spec>|<token>|<lockDelayMs>" (basics.lua): its parts.
local function parseMember(member)
  local owner, spec, token, delay = string.match(member, '^([^|]*)|(%a%d*[%*%d]*f?)|(%d+)|(%d+)$')
  if not owner then foreign('hold "' .. string.sub(member, 1, 40) .. '"') end
  return owner, spec, token, tonumber(delay)
end

-- The hold key's value while held: member, flag, since, description; or nil.
-- A bare member is a hold of the previous layout (a client not yet
-- upgraded): a hold all the same, with flag "old" (never rewritten here).
local function parseHeld(value)
  local member, flag, since, description = string.match(value, '^([^|]*|%a%d*f?|%d+|%d+)|([-s])|(%d*)|(.*)$')
  if member then return member, flag, since, description end
  if string.match(value, '^[^|]*|%a%d*f?|%d+|%d+$') then return value, 'old', '', '' end
  return nil
end

-- spec, ttl, delay, staleAt, since, description of a line entry.
local function parseLineInfo(info)
  local spec, ttl, delay, staleAt, since, description =
    string.match(info or '', '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  return spec, tonumber(ttl), tonumber(delay), tonumber(staleAt), since, description
end
