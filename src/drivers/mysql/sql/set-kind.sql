-- A name nobody holds or awaits takes the kind of its next user.
-- ? kind, fair, permits, name.
UPDATE baton_names SET kind = ?, fair = ?, permits = ? WHERE name = ?
