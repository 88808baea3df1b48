--[[
  batch: the script calls one client made within one turn of its event loop,
  run in order as one EVALSHA (src/drivers/redis/scripts.ts, ScriptBatch).
  Every other script of this folder is compiled into it as a function of its
  own KEYS and ARGV (the line below is replaced by them), so each call runs
  exactly the code it runs alone; the batch only saves the dispatch of one
  EVALSHA per call, in Redis and in the client.

  KEYS    one per call: its key (every script takes one, the name's base)
  ARGV    per call, in the order of KEYS: the script's name, the number of
          its arguments, then its arguments

  Returns one reply per call, in order: what the script returns alone (nil
  as nil), or an error reply where it failed, so one call that fails (a
  name whose keys baton did not write) fails alone.
]]
local RUN = {}
--- @scripts

local replies, at = {}, 1
for i = 1, #KEYS do
  local run, count = RUN[ARGV[at]], tonumber(ARGV[at + 1])
  local args = {}
  for j = 1, count do args[j] = ARGV[at + 1 + j] end
  at = at + 2 + count
  local ok, reply = pcall(run, { KEYS[i] }, args)
  if not ok then
    reply = type(reply) == 'table' and reply.err and reply or { err = tostring(reply) }
  elseif reply == nil then
    reply = false
  end
  replies[i] = reply
end
return replies
