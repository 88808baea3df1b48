-- baton PostgreSQL schema, version 2: who holds and who waits, for operators.
--
-- Every hold and line entry keeps the description its acquire sent (a short
-- JSON text the client builds: host, pid, name; at most 256 bytes, cut here
-- too) and when the database granted or queued it. The acquire statement
-- passes the description as the transaction-local setting
-- baton.description, so the operations' functions keep their signatures
-- (clients of version 1 go on working during a rolling upgrade). A
-- hand-over carries the waiter's description from its line entry to its hold.

ALTER TABLE {{schema}}.holds ADD COLUMN description text, ADD COLUMN since timestamptz;
ALTER TABLE {{schema}}.line ADD COLUMN description text, ADD COLUMN since timestamptz;

CREATE FUNCTION {{schema}}.stamp_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.description IS NULL THEN
    NEW.description := left(nullif(current_setting('baton.description', true), ''), 256);
  END IF;
  NEW.since := coalesce(NEW.since, clock_timestamp());
  RETURN NEW;
END $$;

CREATE TRIGGER stamp_hold BEFORE INSERT ON {{schema}}.holds FOR EACH ROW EXECUTE FUNCTION {{schema}}.stamp_entry();
CREATE TRIGGER stamp_line BEFORE INSERT ON {{schema}}.line FOR EACH ROW EXECUTE FUNCTION {{schema}}.stamp_entry();

-- As in version 1, and each grant takes the waiter's own description (the
-- setting is the releaser's transaction's; it is put back afterwards).
CREATE OR REPLACE FUNCTION {{schema}}.promote(p_name text, p_now timestamptz, p_channel text, p_permits integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_head record;
  v_held bigint;
  v_others bigint;
  v_token bigint;
  v_granted integer := 0;
  v_caller text := coalesce(current_setting('baton.description', true), '');
BEGIN
  LOOP
    SELECT owner, mode, ttl_ms, lock_delay_ms, stale_at, description INTO v_head
      FROM {{schema}}.line WHERE name = p_name ORDER BY seq LIMIT 1;
    EXIT WHEN NOT FOUND;
    IF v_head.stale_at > p_now THEN
      SELECT count(*), count(*) FILTER (WHERE mode <> 'read') INTO v_held, v_others
        FROM {{schema}}.holds WHERE name = p_name AND blocked_until > p_now;
      EXIT WHEN NOT {{schema}}.fits(v_head.mode, v_held, v_others, p_permits, false);
    END IF;
    DELETE FROM {{schema}}.line WHERE name = p_name AND owner = v_head.owner;
    CONTINUE WHEN v_head.stale_at <= p_now;
    PERFORM set_config('baton.description', coalesce(v_head.description, ''), true);
    v_token := {{schema}}.grant_hold(p_name, v_head.owner, v_head.mode, v_head.ttl_ms, v_head.lock_delay_ms, p_now);
    PERFORM pg_notify(p_channel || split_part(v_head.owner, '.', 1),
                      'g|' || v_head.owner || '|' || v_token || '|' || v_head.ttl_ms);
    v_granted := v_granted + 1;
    EXIT WHEN v_head.mode IN ('exclusive', 'write');
  END LOOP;
  PERFORM set_config('baton.description', v_caller, true);
  RETURN v_granted;
END $$;

CREATE OR REPLACE VIEW {{schema}}.lock_info AS
SELECT n.name, n.kind, n.fair, n.permits, n.last_token::text AS last_token,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', h.owner, 'token', h.token::text, 'mode', h.mode,
                   'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000),
                   'description', h.description,
                   'since', floor(extract(epoch FROM h.since) * 1000)) ORDER BY h.token)
                   FROM {{schema}}.holds h WHERE h.name = n.name AND h.expires_at > clock_timestamp()), '[]') AS holders,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', l.owner, 'mode', l.mode, 'description', l.description,
                   'since', floor(extract(epoch FROM l.since) * 1000)) ORDER BY l.seq)
                   FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp()), '[]') AS waiters
  FROM {{schema}}.names n
 WHERE EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name AND h.blocked_until > clock_timestamp())
    OR EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp());
