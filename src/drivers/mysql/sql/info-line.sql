-- inspect / list: the lines of some names, in serving order. ? list of names.
SELECT name, owner, mode, weight, stale_at, description, since
  FROM baton_line WHERE name IN (?) ORDER BY name, seq
