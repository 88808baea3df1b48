-- An end of a hold or line entry: the idle window starts again, and
-- election observers look. ? now µs, name.
UPDATE baton_names SET touched_at = ?, changes = changes + 1 WHERE name = ?
