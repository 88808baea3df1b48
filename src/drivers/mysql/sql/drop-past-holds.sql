-- Holds past their lock delay take no slot any more. ? name, now µs.
DELETE FROM baton_holds WHERE name = ? AND blocked_until <= ?
