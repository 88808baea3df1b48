-- Bounded state: locks the candidates as every operation does, skipping
-- those a running operation holds. ? list of names.
SELECT name, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM baton_names WHERE name IN (?) FOR UPDATE SKIP LOCKED
