--[[
  raise-token: lifts a name's fencing counter to at least a token granted
  elsewhere (Redlock: a grant's token is the highest counter of its majority,
  and each granting node is raised to it, so that any later majority, which
  shares a node with this one, draws a larger token). A free hold key takes
  the token as its counter (its expiry kept). A held one whose holder is
  ARGV[3] (the lease being raised, the common case) takes the token in
  place, in its member: the hold then carries the lease's token, the key its
  flag, and the node's next release and vote keep their short paths. Another
  holder keeps its member, and the token goes to the floor key t beside it,
  which the next grant folds in. A counter that is gone is left to the clock
  floor of nextToken.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] token (decimal)
  ARGV[2] fence ttl ms: how long a floor beside a held key is kept
  ARGV[3] (optional) the owner whose hold takes the token in place

  Returns 1 if raised, else 0.
]]
--- @include "keys"
--- @include "token"
--- @include "basics"

local raised = tonumber(ARGV[1])
local member, counter, value = readHoldKey()
if not value or counter >= raised then return 0 end
if member and ARGV[3] and string.sub(member, 1, #ARGV[3] + 1) == ARGV[3] .. '|' then
  -- "<owner>|<spec>|<token>|<delay>" then the rest of the value, kept as it is.
  local owner, spec, token = parseMember(member)
  redis.call('SET', X, owner .. '|' .. spec .. '|' .. ARGV[1] .. string.sub(value, #owner + #spec + #token + 3), 'KEEPTTL')
  return 1
end
if member then
  redis.call('SET', K.t, ARGV[1], 'PX', math.max(tonumber(ARGV[2]), redis.call('PTTL', X)))
  settle()
else
  redis.call('SET', X, ARGV[1] .. '|' .. select(2, freeCounter(value)), 'KEEPTTL')
end
return 1
