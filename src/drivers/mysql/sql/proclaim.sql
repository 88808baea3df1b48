-- Leader election: the value beside a live hold, under the name's lock.
-- ? value, name, owner, token, now µs.
UPDATE baton_holds SET value = ? WHERE name = ? AND owner = ? AND token = ? AND expires_at > ?
