--[[
  The helpers every slow path needs, kept apart from lib.lua so that a
  script returning early never builds lib's closures.

  Keys of one name, all "<prefix>:{<name>}:" + a suffix (K below):
    x   STRING the hold key: the exclusive hold (mutex, write) AND the
               name's fencing counter, so that a free mutex is taken by
               reading and writing this one key.
               held: "<member>|<flag>|<since>|<description>", PX = lease +
                     lock delay (the key expiring is the hold ending);
                     a leader's hold (baton.election) carries its value
                     after the description: "<description>\0<value>"
                     (a description is JSON text, never a raw \0)
               free: "<counter>|<flag>", PX = fenceTtl from the last
                     release (bounded state)
               <flag> "-" promises that none of h, q and t exist; "s" (slow)
               says they may. Every script that creates h, q or t sets "s"
               (settle), so a fast path that reads "-" may skip them; a
               missing x promises nothing (the slow path looks).
    h   ZSET   shared holds (read, permit): member, scored by lease end +
               lock delay (store ms)
    d   HASH   owner -> "<since>|<description>" of shared holds; lives as
               long as h
    t   STRING a counter floor beside x (Redlock raising a held name's
               counter, or a counter an earlier layout kept): folded into x
               by the next slow-path grant
    q   ZSET   line: owner -> arrival number (order of service)
    qi  HASH   owner -> "<spec>|<ttlMs>|<lockDelayMs>|<staleAt>|<since>|<description>";
               "~seq" last arrival number, "~w" writers (w) in line, "~exp"
               when q and qi expire (store ms): raised, with slack, only
               when a joining entry would outlive it. qi exists while q does
               (both are deleted when the line empties)
    o   STRING "observed": a client follows the name's leader (Driver.observe,
               observe.lua); while it exists, every exclusive grant, hand-over,
               release and forced release is published to the observers, not
               only a leader's (with a value), and the flag of x stays "s"
               so the fast paths, which publish nothing, leave such names
  A member is "<owner>|<spec>|<token>|<lockDelayMs>". It is expired once less
  than its lock delay is left, and gone (pruned, or expired by Redis) after.
  <spec> is a mode letter (x exclusive, r read, w write, p permit), the
  permit count for a semaphore, "*<weight>" for a permit of weight > 1
  (weighted permits), and "f" when fair: "x", "wf", "p5", "p8*3f".
  Exclusive and shared holds never coexist: a name has one kind at a time.

  Every script is idempotent for an owner: running an attempt twice (a reply
  lost and the command re-sent) finds the owner's hold or line entry and
  answers as the first run did; it never makes a second one.
]]

local K = { x = X, h = base .. 'h', d = base .. 'd', t = base .. 't', q = base .. 'q', qi = base .. 'qi', o = base .. 'o' }

local function modeOf(spec)
  return string.sub(spec, 1, 1)
end

local function isExclusive(mode)
  return mode == 'x' or mode == 'w'
end

-- The owner's shared hold (member, score), found by its owner prefix.
local function sharedHoldOf(sharedKey, owner)
  local pattern = string.gsub(owner, '[%*%?%[%]\\]', '\\%0') .. '|*'
  local cursor = '0'
  repeat
    local page = redis.call('ZSCAN', sharedKey, cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    if page[2][1] then return page[2][1], tonumber(page[2][2]) end
  until cursor == '0'
  return nil, nil
end

-- Weighted permits: how many permits a hold or line entry of `spec` takes.
local function weightOf(spec)
  return tonumber(string.match(spec, '%*(%d+)')) or 1
end

-- Weighted permits: the weights of the shared holds (lock-delay phantoms
-- included) added up; at least their number, so a full name is seen
-- without reading them. Reads at most `permits` members.
local function weightHeld(permits)
  local count = redis.call('ZCARD', K.h)
  if count == 0 or count >= permits then return count end
  local used = 0
  for _, member in ipairs(redis.call('ZRANGE', K.h, 0, -1)) do
    used = used + weightOf(select(2, parseMember(member)))
  end
  return used
end

-- Renews the owner's shared hold to `ttl` from now; the key lives as long
-- as its longest member, and so do the holds' details (d).
local function renewShared(sharedKey, member, now, ttl, delay)
  local ends = now + ttl + delay
  redis.call('ZADD', sharedKey, ends, member)
  if redis.call('PTTL', sharedKey) < ends - now then
    redis.call('PEXPIRE', sharedKey, ends - now)
    redis.call('PEXPIRE', K.d, ends - now)
  end
end

-- Drops shared members whose lease and lock delay have both passed.
local function prune(sharedKey, now)
  redis.call('ZREMRANGEBYSCORE', sharedKey, '-inf', now)
end

-- The wake-up channel of the client of `owner` (owners are "<client>.<id>").
-- A prefix with a {hash tag} is a sharded channel of the name's slot (Redis
-- Cluster >= 7): SPUBLISH reaches only that shard, not every node.
local function wake(channelPrefix, owner, message)
  local command = string.find(channelPrefix, '{', 1, true) and 'SPUBLISH' or 'PUBLISH'
  redis.call(command, channelPrefix .. string.match(owner, '^([^.]*)'), message)
end

-- Leader election: tells the observers of this name (Driver.observe) that
-- its leader or the leader's value may have changed. Their channel is the
-- wake-up channel prefix, "=", and the base key (in the name's slot when
-- sharded); only holds that carry a value ("\0" in their note) send it, so
-- plain locks publish nothing more.
local function electionNotice(channelPrefix)
  local command = string.find(channelPrefix, '{', 1, true) and 'SPUBLISH' or 'PUBLISH'
  redis.call(command, channelPrefix .. '=' .. base, '')
end

local function carriesValue(note)
  return note ~= nil and string.find(note, '\0', 1, true) ~= nil
end

-- Whether a change of the exclusive hold with `note` is told to the name's
-- observers: a leader's (its note carries a value), or any while someone
-- observes the name (K.o), so a plain mutex's holder is followed too.
local function noticeWanted(note)
  return carriesValue(note) or redis.call('EXISTS', K.o) == 1
end

-- The hold key's value, read once per script (nil when missing) and kept
-- in step by writeHoldKey: a slow path looks at it many times.
-- `freeTtl`: the hold was freed (freeHoldKey) and that write is still to
-- be made, by settle(), unless a grant of the same script replaces it.
local holdValue, holdRead, freeTtl = nil, false, nil

local function holdKeyValue()
  if not holdRead then
    holdValue = redis.call('GET', X) or nil
    holdRead = true
  end
  return holdValue
end

-- A fast path that already read the hold key hands its value on.
local function seedHoldKey(value)
  holdValue, holdRead = value or nil, true
end

local function writeHoldKey(value, ...)
  redis.call('SET', X, value, ...)
  holdValue, holdRead, freeTtl = value, true, nil
end

-- The counter floor t as a fast path read it beside x (MGET), if it did.
local floorValue, floorRead = nil, false

local function seedFloor(value)
  floorValue, floorRead = value or nil, true
end

-- The hold key now: the exclusive hold's member (or nil), the counter, and
-- the whole value (nil when the key is missing). FOREIGN for a value baton
-- never writes.
local function readHoldKey()
  local value = holdKeyValue()
  if not value then return nil, nil, nil end
  local member = parseHeld(value)
  if member then
    local _, _, token = parseMember(member)
    return member, tonumber(token), value
  end
  local counter = freeCounter(value)
  if not counter then foreign('hold key "' .. string.sub(value, 1, 40) .. '"') end
  return nil, tonumber(counter), value
end

-- The next token for a grant now: above the hold key's counter and the
-- floor in t (folded in and dropped: the grant writes its token to x).
local function drawToken(us, unit)
  local _, last = readHoldKey()
  local floor = floorValue
  if not floorRead then floor = redis.call('GET', K.t) end
  floorValue, floorRead = nil, true
  if floor then
    local n = tonumber(floor)
    if not n then foreign('fencing counter') end
    if not last or n > last then last = n end
    redis.call('DEL', K.t)
  end
  return nextToken(last, us, unit)
end

-- The hold key free again, keeping `counter` for `fenceTtl` ms. Written by
-- settle(), which every script that frees calls last, with its flag: a
-- hand-over's grant replaces it first, so the release writes x once.
-- Nothing may read x from Redis in between (scripts read it through
-- readHoldKey, and the PTTLs of x are read before a hold is freed).
local function freeHoldKey(counter, fenceTtl)
  holdValue, holdRead, freeTtl = int(counter) .. '|s', true, fenceTtl
end

-- Sets the hold key's flag to what h, q, t and o say now (see above). Every
-- script that may have created or removed one of them calls it last.
-- `busy`: the caller knows one of them may exist (it just joined the line,
-- or handed the name to the line's head): "s" without a look.
-- It also keeps the name in the index of names in use (keys.lua LISTED)
-- while it is held or has shared holds or a line, and out of it once idle.
local function settle(busy)
  local value = holdKeyValue()
  local member, flag, since, description
  if value then member, flag, since, description = parseHeld(value) end
  local others = busy or redis.call('EXISTS', K.h, K.q) > 0
  if others or member then
    redis.call('ZADD', LISTED, 0, NAME)
  else
    redis.call('ZREM', LISTED, NAME)
  end
  if not value then return end
  local want = (others or redis.call('EXISTS', K.t, K.o) > 0) and 's' or '-'
  if member then
    if flag ~= want and flag ~= 'old' then writeHoldKey(heldValue(member, want, since, description), 'KEEPTTL') end
    return
  end
  local counter
  counter, flag = freeCounter(value)
  if counter and freeTtl then
    writeHoldKey(counter .. '|' .. want, 'PX', freeTtl)
  elseif counter and flag ~= want then
    writeHoldKey(counter .. '|' .. want, 'KEEPTTL')
  end
end
