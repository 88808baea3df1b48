-- Keeps an owner's place in line a while longer. ? stale_at, name, owner.
UPDATE baton_line SET stale_at = ? WHERE name = ? AND owner = ?
