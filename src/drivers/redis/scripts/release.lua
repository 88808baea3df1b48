--[[
  release: ends a hold, or leaves the line if the owner only waits, then hands
  the name to the next in line. Idempotent: a second run finds nothing to end.

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] holder member, or "" when the owner does not know its token
          (it gave up waiting; a hand-over may have raced with that)
  ARGV[2] owner
  ARGV[3] wake-up channel prefix
  ARGV[4] fence ttl ms
  ARGV[5] "1" when the member's token is a guess (Redlock: a node whose
          answer to the attempt had not come): if it does not match, the
          owner's hold is ended as with ARGV[1] ""; absent otherwise

  Returns 1 if the owner held the name, else 0.
]]

local member, owner = ARGV[1], ARGV[2]
local released = 0
if member ~= '' then
  -- Fast path: the owner's own hold, and nobody waits.
  local mode = string.match(member, '^[^|]*|(%a)')
  if mode == 'x' or mode == 'w' then
    if redis.call('GET', KEYS[5]) == member then
      released = redis.call('DEL', KEYS[5])
    elseif mode == 'w' then
      -- A downgrade to read that crossed this release: end the read hold.
      released = redis.call('ZREM', KEYS[1], (string.gsub(member, '^([^|]*)|w', '%1|r')))
    end
  else
    released = redis.call('ZREM', KEYS[1], member)
  end
  if released == 0 and ARGV[5] == '1' then
    -- The token was a guess: the owner's exclusive hold whatever its token
    -- (a prefix test, without the full script), else the full search below.
    local held = redis.call('GET', KEYS[5])
    local prefix = owner .. '|'
    if held and string.sub(held, 1, #prefix) == prefix then
      released = redis.call('DEL', KEYS[5])
      if redis.call('EXISTS', KEYS[3]) == 0 then return released end
    else
      member = ''
    end
  elseif redis.call('EXISTS', KEYS[3]) == 0 then
    return released
  end
end

--- @include "token"
--- @include "basics"
--- @include "lib"

local us, now = clock()
if member == '' then
  local held = holdOf(KEYS, owner, now)
  if held then released = dropHold(KEYS, held) end
  leaveLine(KEYS[3], KEYS[4], owner)
end
if released == 1 or member == '' then
  prune(KEYS[1], now)
  promote(KEYS, ARGV[3], us, now, tonumber(ARGV[4]))
end
return released
