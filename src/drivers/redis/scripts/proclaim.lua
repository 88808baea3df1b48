--[[
  proclaim: leader election; replaces the value kept beside an exclusive
  hold (after the description, "<description>\0<value>": see basics.lua),
  keeping the hold, its token and its lease, and tells the name's
  observers. A hold gone or in its lock delay is not replaced.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] holder member ("<owner>|<spec>|<token>|<lockDelayMs>")
  ARGV[2] the new value
  ARGV[3] wake-up channel prefix; the observers' channel is it, "=", and KEYS[1]

  Returns 1 if the owner held the name, else 0.
]]
--- @include "keys"
--- @include "token"
--- @include "basics"

local member = ARGV[1]
local value = redis.call('GET', X)
if not value or string.sub(value, 1, #member + 1) ~= member .. '|' then return 0 end
local _, _, _, delay = parseMember(member)
if redis.call('PTTL', X) <= delay then return 0 end
local _, flag, since, note = parseHeld(value)
if flag == 'old' then return 0 end
local cut = string.find(note, '\0', 1, true)
local description = cut and string.sub(note, 1, cut - 1) or note
writeHoldKey(heldValue(member, flag, since, description .. '\0' .. ARGV[2]), 'KEEPTTL')
electionNotice(ARGV[3])
return 1
