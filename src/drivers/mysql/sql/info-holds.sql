-- inspect / list: the holds of some names. ? list of names.
SELECT name, owner, mode, weight, token, expires_at, blocked_until, description, since, value
  FROM baton_holds WHERE name IN (?) ORDER BY name, token
