--[[
  unlist: drops a name from the index of names in use (keys.lua LISTED)
  when it is idle: no exclusive hold (the hold key missing or only the
  fencing counter), no shared hold, no line. list calls it for the names it
  found idle (a holder that died never released); in one script, so a name
  taken between list's look and this call stays listed.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see keys.lua)
  ARGV: none

  Returns 1 if the name was dropped, else 0.
]]
--- @include "keys"

local value = redis.call('GET', X)
if value and not string.match(value, '^%d+|[-s]$') then return 0 end
if redis.call('EXISTS', base .. 'h', base .. 'q') > 0 then return 0 end
return redis.call('ZREM', LISTED, NAME)
