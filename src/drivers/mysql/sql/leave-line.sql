-- Takes line entries out (served, stale, given up). ? name, owners (a list).
DELETE FROM baton_line WHERE name = ? AND owner IN (?)
