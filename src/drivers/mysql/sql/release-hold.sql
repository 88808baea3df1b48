-- Ends an owner's live hold (an expired one keeps its slot for the lock
-- delay). ? name, owner, now µs, token (NULL: any hold of the owner).
DELETE FROM baton_holds WHERE name = ? AND owner = ? AND expires_at > ? AND (? IS NULL OR token = ?)
