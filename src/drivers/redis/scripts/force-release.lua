--[[
  force-release: admin; frees a name at once. Drops every hold (lock delay
  included) and tells each holder on its client's channel ("l"), grants the
  name to nobody, empties the line and tells every live waiter to try again
  now ("r"): they line up again in the order they come back, and a waiter
  that died (nobody answers its "r") is gone at once instead of heading the
  line until its entry goes stale. The memory store does the same. Keys holding what baton did not write are
  deleted (the fencing counter too: the clock floor keeps tokens increasing).

  KEYS[1] shared   KEYS[2] token   KEYS[3] line   KEYS[4] lineinfo   KEYS[5] exclusive
  ARGV[1] wake-up channel prefix

  Returns the number of holds (and foreign values) dropped.
]]
--- @include "token"
--- @include "basics"
--- @include "lib"

local channelPrefix = ARGV[1]
local dropped = clearForeign(KEYS)
local _, now = clock()
prune(KEYS[1], now)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local exclusive = redis.call('GET', KEYS[5])
if exclusive then table.insert(members, exclusive) end
for _, member in ipairs(members) do
  local ok, owner = pcall(parseMember, member)
  if ok then wake(channelPrefix, owner, 'l|' .. owner .. '|released by force (forceRelease)') end
end
redis.call('DEL', KEYS[1], KEYS[5])

-- One "try again" per waiting client, naming its live waiters.
local byClient, clients = {}, {}
for _, waiter in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local _, _, _, staleAt = parseLineInfo(redis.call('HGET', KEYS[4], waiter))
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
redis.call('DEL', KEYS[3], KEYS[4])
for _, client in ipairs(clients) do
  wake(channelPrefix, byClient[client][1], 'r|' .. table.concat(byClient[client], '|'))
end
return #members + dropped
