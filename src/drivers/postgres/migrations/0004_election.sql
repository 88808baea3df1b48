-- baton PostgreSQL schema, version 4: leader election (baton.election).
--
-- A candidate's announced value is kept beside its hold and its line entry
-- (a hand-over carries it from the one to the other, like the
-- description). The acquire statement passes it as the transaction-local
-- setting baton.value: "" for none, else "v" and the value (so that an
-- empty value is a value), and the operations' functions keep their
-- signatures (clients of versions 1 to 3 go on working: their holds have
-- no value). Every insert, delete or change of value of a hold that carries
-- a value is told on the channel "<schema>.leader" with the lock's name as
-- its payload, for the clients that observe that election (each re-reads
-- the name). A hold that expires is not deleted by anyone at its end:
-- observers read again at the lease's end (the core does).

ALTER TABLE {{schema}}.holds ADD COLUMN value text;
ALTER TABLE {{schema}}.line ADD COLUMN value text;

CREATE OR REPLACE FUNCTION {{schema}}.stamp_entry() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_value text := coalesce(current_setting('baton.value', true), '');
BEGIN
  IF NEW.description IS NULL THEN
    NEW.description := left(nullif(current_setting('baton.description', true), ''), 256);
  END IF;
  IF NEW.value IS NULL AND v_value LIKE 'v%' THEN
    NEW.value := substr(v_value, 2);
  END IF;
  NEW.since := coalesce(NEW.since, clock_timestamp());
  RETURN NEW;
END $$;

CREATE FUNCTION {{schema}}.tell_leader() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '.leader', OLD.name);
  ELSE
    PERFORM pg_notify(TG_TABLE_SCHEMA || '.leader', NEW.name);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER tell_leader_insert AFTER INSERT ON {{schema}}.holds
  FOR EACH ROW WHEN (NEW.value IS NOT NULL) EXECUTE FUNCTION {{schema}}.tell_leader();
CREATE TRIGGER tell_leader_delete AFTER DELETE ON {{schema}}.holds
  FOR EACH ROW WHEN (OLD.value IS NOT NULL) EXECUTE FUNCTION {{schema}}.tell_leader();
CREATE TRIGGER tell_leader_update AFTER UPDATE OF value ON {{schema}}.holds
  FOR EACH ROW WHEN (NEW.value IS DISTINCT FROM OLD.value) EXECUTE FUNCTION {{schema}}.tell_leader();

-- As in version 3 (weights), and each grant also takes the waiter's own value.
CREATE OR REPLACE FUNCTION {{schema}}.promote(p_name text, p_now timestamptz, p_channel text, p_permits integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_head record;
  v_held bigint;
  v_used bigint;
  v_others bigint;
  v_token bigint;
  v_granted integer := 0;
  v_caller text := coalesce(current_setting('baton.description', true), '');
  v_caller_weight text := coalesce(current_setting('baton.weight', true), '');
  v_caller_value text := coalesce(current_setting('baton.value', true), '');
BEGIN
  LOOP
    SELECT owner, mode, ttl_ms, lock_delay_ms, stale_at, description, weight, value INTO v_head
      FROM {{schema}}.line WHERE name = p_name ORDER BY seq LIMIT 1;
    EXIT WHEN NOT FOUND;
    IF v_head.stale_at > p_now THEN
      SELECT count(*), coalesce(sum(weight), 0), count(*) FILTER (WHERE mode <> 'read') INTO v_held, v_used, v_others
        FROM {{schema}}.holds WHERE name = p_name AND blocked_until > p_now;
      EXIT WHEN NOT {{schema}}.fits(v_head.mode, v_held, v_used, v_others, p_permits, false, v_head.weight);
    END IF;
    DELETE FROM {{schema}}.line WHERE name = p_name AND owner = v_head.owner;
    CONTINUE WHEN v_head.stale_at <= p_now;
    PERFORM set_config('baton.description', coalesce(v_head.description, ''), true);
    PERFORM set_config('baton.weight', v_head.weight::text, true);
    PERFORM set_config('baton.value', CASE WHEN v_head.value IS NULL THEN '' ELSE 'v' || v_head.value END, true);
    v_token := {{schema}}.grant_hold(p_name, v_head.owner, v_head.mode, v_head.ttl_ms, v_head.lock_delay_ms, p_now);
    PERFORM pg_notify(p_channel || split_part(v_head.owner, '.', 1),
                      'g|' || v_head.owner || '|' || v_token || '|' || v_head.ttl_ms);
    v_granted := v_granted + 1;
    EXIT WHEN v_head.mode IN ('exclusive', 'write');
  END LOOP;
  PERFORM set_config('baton.description', v_caller, true);
  PERFORM set_config('baton.weight', v_caller_weight, true);
  PERFORM set_config('baton.value', v_caller_value, true);
  RETURN v_granted;
END $$;

CREATE OR REPLACE VIEW {{schema}}.lock_info AS
SELECT n.name, n.kind, n.fair, n.permits, n.last_token::text AS last_token,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', h.owner, 'token', h.token::text, 'mode', h.mode, 'weight', h.weight,
                   'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000),
                   'description', h.description,
                   'since', floor(extract(epoch FROM h.since) * 1000),
                   'value', h.value) ORDER BY h.token)
                   FROM {{schema}}.holds h WHERE h.name = n.name AND h.expires_at > clock_timestamp()), '[]') AS holders,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', l.owner, 'mode', l.mode, 'weight', l.weight, 'description', l.description,
                   'since', floor(extract(epoch FROM l.since) * 1000)) ORDER BY l.seq)
                   FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp()), '[]') AS waiters
  FROM {{schema}}.names n
 WHERE EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name AND h.blocked_until > clock_timestamp())
    OR EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp());
