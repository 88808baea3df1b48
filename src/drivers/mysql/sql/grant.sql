-- A grant moves the name's fencing counter (to the token the driver chose:
-- one above the counter, never below the clock in microseconds).
-- ? token, now µs, name.
UPDATE baton_names SET last_token = ?, touched_at = ?, changes = changes + 1 WHERE name = ?
