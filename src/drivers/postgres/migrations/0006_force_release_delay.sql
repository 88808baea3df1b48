-- baton PostgreSQL schema, version 6: forceRelease counts a lock-delay
-- phantom (an expired hold still blocking its slot) as something it freed,
-- as every other store does (docs/api.md): the name was blocked, now it is
-- not. Holders past their lock delay (not yet swept) still count for nothing.

CREATE OR REPLACE FUNCTION {{schema}}.force_release(p_name text, p_channel text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
  v_row record;
  v_dropped integer := 0;
BEGIN
  UPDATE {{schema}}.names SET touched_at = clock_timestamp() WHERE name = p_name;
  IF NOT FOUND THEN RETURN 0; END IF;
  v_now := clock_timestamp();
  FOR v_row IN DELETE FROM {{schema}}.holds WHERE name = p_name RETURNING owner, expires_at, blocked_until LOOP
    CONTINUE WHEN v_row.blocked_until <= v_now;
    v_dropped := v_dropped + 1;
    CONTINUE WHEN v_row.expires_at <= v_now;
    PERFORM pg_notify(p_channel || split_part(v_row.owner, '.', 1),
                      'l|' || v_row.owner || '|released by force (forceRelease)');
  END LOOP;
  FOR v_row IN DELETE FROM {{schema}}.line WHERE name = p_name RETURNING owner, stale_at LOOP
    CONTINUE WHEN v_row.stale_at <= v_now;
    PERFORM pg_notify(p_channel || split_part(v_row.owner, '.', 1), 'r|' || v_row.owner);
  END LOOP;
  RETURN v_dropped;
END $$;
