-- forceRelease: every hold (lock delay included) and the whole line.
-- ? name, name.
DELETE FROM baton_holds WHERE name = ?;
DELETE FROM baton_line WHERE name = ?
