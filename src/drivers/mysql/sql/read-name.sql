-- A name's row, locked for the rest of the transaction, with the database
-- clock read after the lock was granted (the time authority of the whole
-- operation). ? name.
SELECT kind, fair, permits, last_token, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM baton_names WHERE name = ? FOR UPDATE
