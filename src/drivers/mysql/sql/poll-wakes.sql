-- A client's poller: its wake-ups, oldest first. ? client id.
SELECT id, message FROM baton_wakes WHERE client = ? ORDER BY id LIMIT 200
