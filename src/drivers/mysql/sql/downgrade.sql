-- An owner's live write hold becomes a read hold, same token and lease.
-- ? name, owner, token, now µs.
UPDATE baton_holds SET mode = 'read' WHERE name = ? AND owner = ? AND token = ? AND mode = 'write' AND expires_at > ?
