--[[
  Fenced write: change a key only with a fencing token not below the highest
  token accepted for it, and remember the new highest. One script, so the
  check and the write are one atomic step.

  KEYS[1]  the fence key (holds the highest accepted token, decimal text)
  KEYS[2]  the data key
  ARGV[1]  the writer's fencing token, decimal text without leading zeros
  ARGV[2]  'set' | 'del'
  ARGV[3]  for 'set': the value
  ARGV[4]  for 'set': expiry of the data in ms, or '0' for none
  ARGV[5]  how long to keep the fence key, in ms ('0': forever). It must outlive
           any holder that could still write, so keep it long (default 1 day).

  Returns {1} when written, {0, highest} when the token is stale.
]]
local token = ARGV[1]
local highest = redis.call('GET', KEYS[1])

-- Tokens may exceed 2^53, past what Lua numbers hold exactly: compare the
-- decimal texts (no leading zeros), longer is larger.
if highest and (#highest > #token or (#highest == #token and highest > token)) then
  return {0, highest}
end

if ARGV[2] == 'set' then
  if ARGV[4] ~= '0' then
    redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[2], ARGV[3])
  end
else
  redis.call('DEL', KEYS[2])
end

if ARGV[5] ~= '0' then
  redis.call('SET', KEYS[1], token, 'PX', ARGV[5])
else
  redis.call('SET', KEYS[1], token)
end
return {1}
