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
-- The index of the names in use (a sorted set of names, score 0), which
-- list reads instead of scanning every idle name's hold key: the last key
-- declared on a Cluster (one per slot, in the name's slot: keys.ts
-- listedKey), else "<prefix>:names" (a prefix has no "{"). A superset:
-- every script that puts a name in use adds it, a script that leaves it
-- idle removes it, and list drops names it finds idle (unlist.lua).
local LISTED = KEYS[2] and KEYS[#KEYS] or string.match(base, '^([^{]*):{') .. ':names'
local NAME = string.match(base, '{(.*)}:$')
