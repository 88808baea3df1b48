-- extend's first step: which of the holds are still live, locked until the
-- renewal. ? list of (name, owner, token).
SELECT name, owner, token, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us
  FROM baton_holds
 WHERE (name, owner, token) IN (?) AND expires_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
 FOR UPDATE
