--[[
  Included first by every script: the name's keys. Every script takes one
  key, KEYS[1], the name's base "<prefix>:{<name>}:", and derives the others
  from it (they share its {hash tag}, so its cluster slot). See basics.lua
  for what each key holds. The fast paths (a free mutex, the release of a
  hold nobody waits for) come right after this file: each EVALSHA builds
  every local function of its chunk before the line it runs, so they are
  written out in place, before token.lua, basics.lua and lib.lua.
]]

local base = KEYS[1]
local X = base .. 'x'
