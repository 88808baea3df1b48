-- The database clock, µs since the epoch (the session is UTC).
SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
