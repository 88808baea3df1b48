-- A client's poller: the doorbell to wait on (bell.ts), that of the client
-- of a live holder of a name this client waits for, read in the same round
-- trip as the wait so it follows every hand-over. ? names.
SET @baton_bell = (SELECT CONCAT('baton.bell.', SUBSTRING_INDEX(owner, '.', 1)) FROM baton_holds
                    WHERE name IN (?) AND expires_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                    ORDER BY expires_at LIMIT 1);
SELECT GET_LOCK(COALESCE(@baton_bell, 'baton.bell.-'), ?) AS got;
DO RELEASE_LOCK(COALESCE(@baton_bell, 'baton.bell.-'))
