-- A client's poller, for election observers: the change counters of the
-- observed names. ? names.
SELECT name, changes FROM baton_names WHERE name IN (?)
