-- inspect / list, first read of a snapshot: names that start with a prefix
-- after a cursor, in byte order, and the clock. ? LIKE pattern, cursor, limit.
SELECT name, kind, fair, permits, last_token, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM baton_names WHERE name LIKE ? AND name > ? ORDER BY name LIMIT ?
