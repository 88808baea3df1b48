--[[
  raise-token: lifts a name's fencing counter to at least a token granted
  elsewhere (Redlock: a grant's token is the highest counter of its majority,
  and each granting node is raised to it, so that any later majority, which
  shares a node with this one, draws a larger token). Keeps the counter's own
  expiry; a counter that is gone is left to the clock floor of nextToken.

  KEYS[1] token
  ARGV[1] token (decimal)

  Returns 1 if raised, else 0.
]]

local current = redis.call('GET', KEYS[1])
if current and tonumber(current) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  return 1
end
return 0
