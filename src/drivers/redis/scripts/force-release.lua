--[[
  force-release: admin; frees a name at once. Drops every hold (lock delay
  included) and tells each holder on its client's channel ("l"), grants the
  name to nobody, empties the line and tells every live waiter to try again
  now ("r"): they line up again in the order they come back, and a waiter
  that died (nobody answers its "r") is gone at once instead of heading the
  line until its entry goes stale. The memory store does the same. Keys
  holding what baton did not write are deleted (the fencing counter too: the
  clock floor keeps tokens increasing); a hold key baton wrote keeps the counter.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] wake-up channel prefix
  ARGV[2] fence ttl ms: how long the counter outlives the dropped hold

  Returns the number of holds (and foreign values) dropped.
]]
--- @include "keys"
--- @include "token"
--- @include "basics"
--- @include "lib"

local channelPrefix = ARGV[1]
local dropped = clearForeign()
local _, now = clock()
prune(K.h, now)
local members = redis.call('ZRANGE', K.h, 0, -1)
local exclusive, counter, held = readHoldKey()
if exclusive and noticeWanted(held) then electionNotice(channelPrefix) end
if exclusive then
  table.insert(members, exclusive)
  freeHoldKey(counter, tonumber(ARGV[2]))
end
for _, member in ipairs(members) do
  local ok, owner = pcall(parseMember, member)
  if ok then wake(channelPrefix, owner, 'l|' .. owner .. '|released by force (forceRelease)') end
end
redis.call('DEL', K.h, K.d)

-- One "try again" per waiting client, naming its live waiters.
local byClient, clients = {}, {}
for _, waiter in ipairs(redis.call('ZRANGE', K.q, 0, -1)) do
  local _, _, _, staleAt = parseLineInfo(redis.call('HGET', K.qi, waiter))
  if staleAt and staleAt > now then
    local client = string.match(waiter, '^([^.]*)')
    if not byClient[client] then
      byClient[client] = { waiter }
      table.insert(clients, client)
    else
      table.insert(byClient[client], waiter)
    end
  end
end
redis.call('DEL', K.q, K.qi)
for _, client in ipairs(clients) do
  wake(channelPrefix, byClient[client][1], 'r|' .. table.concat(byClient[client], '|'))
end
settle()
return #members + dropped
