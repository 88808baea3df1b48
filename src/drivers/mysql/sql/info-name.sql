-- inspect, first read of a snapshot: one name, and the clock. ? name.
SELECT name, kind, fair, permits, last_token, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM baton_names WHERE name = ?
