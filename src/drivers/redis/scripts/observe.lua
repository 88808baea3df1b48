--[[
  observe: marks the name as followed by an observer (Driver.observe) for a
  while, so that every change of its exclusive hold is published on its
  observers' channel, a plain mutex's as a leader's (see basics.lua, K.o).
  The hold key's flag is set to "s" in the same step: the fast paths, which
  publish nothing, then leave the name to the slow paths. An observer renews
  the mark well within its ttl; once nobody does, it expires, and the next
  script that settles the name gives the fast paths back.

  KEYS[1] the name's base key "<prefix>:{<name>}:" (see token.lua)
  ARGV[1] how long the mark lasts, ms

  Returns 1.
]]
--- @include "keys"
--- @include "token"
--- @include "basics"

redis.call('SET', K.o, '1', 'PX', ARGV[1])
settle()
return 1
