-- baton PostgreSQL schema, version 3: weighted permits.
--
-- A semaphore hold may take several of its name's permits (a semaphore's
-- acquire({ weight })): holds and line entries keep their weight, and a
-- permit fits while the weights of the holds taking a slot (lock delay
-- included: an expired weighted permit keeps its whole weight taken) plus
-- its own come to at most `permits`. The acquire statement passes the weight
-- as the transaction-local setting baton.weight, as it does the description
-- (version 2), so the functions keep their signatures and clients of
-- version 2 go on working during a rolling upgrade: their holds weigh 1.
-- The line is served in order: a head that does not fit stops everyone
-- behind it, and a newcomer's permit never passes a live head.

ALTER TABLE {{schema}}.holds ADD COLUMN weight integer NOT NULL DEFAULT 1;
ALTER TABLE {{schema}}.line ADD COLUMN weight integer NOT NULL DEFAULT 1;

-- The weight this transaction's acquire asks for (1 when none was set).
CREATE FUNCTION {{schema}}.asked_weight() RETURNS integer LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('baton.weight', true), '')::integer, 1)
$$;

CREATE FUNCTION {{schema}}.weigh_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.weight := {{schema}}.asked_weight();
  RETURN NEW;
END $$;

CREATE TRIGGER weigh_hold BEFORE INSERT ON {{schema}}.holds FOR EACH ROW EXECUTE FUNCTION {{schema}}.weigh_entry();
CREATE TRIGGER weigh_line BEFORE INSERT ON {{schema}}.line FOR EACH ROW EXECUTE FUNCTION {{schema}}.weigh_entry();

-- Whether a hold of `mode` and `weight` fits next to `held` holds weighing
-- `used` in all, `others` of which are not readers (version 1's fits, with
-- weights: a permit fits while used + weight <= permits).
CREATE FUNCTION {{schema}}.fits(mode text, held bigint, used bigint, others bigint, permits integer, writer_waiting boolean, weight integer)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE mode
    WHEN 'read' THEN others = 0 AND NOT writer_waiting
    WHEN 'permit' THEN used + weight <= permits
    ELSE held = 0
  END
$$;

-- As in version 2, with weights: the head is granted while its weight fits,
-- and its hold takes the weight of its line entry (the setting is the
-- releaser's transaction's; both are put back afterwards).
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
BEGIN
  LOOP
    SELECT owner, mode, ttl_ms, lock_delay_ms, stale_at, description, weight INTO v_head
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
    v_token := {{schema}}.grant_hold(p_name, v_head.owner, v_head.mode, v_head.ttl_ms, v_head.lock_delay_ms, p_now);
    PERFORM pg_notify(p_channel || split_part(v_head.owner, '.', 1),
                      'g|' || v_head.owner || '|' || v_token || '|' || v_head.ttl_ms);
    v_granted := v_granted + 1;
    EXIT WHEN v_head.mode IN ('exclusive', 'write');
  END LOOP;
  PERFORM set_config('baton.description', v_caller, true);
  PERFORM set_config('baton.weight', v_caller_weight, true);
  RETURN v_granted;
END $$;

-- As in version 1, counting weights (see the top of this file).
CREATE OR REPLACE FUNCTION {{schema}}.acquire(
  p_name text, p_owner text, p_kind text, p_mode text, p_fair boolean, p_permits integer,
  p_ttl_ms integer, p_lock_delay_ms integer, p_enqueue boolean, p_queue_ttl_ms integer, p_channel text,
  OUT status text, OUT token bigint, OUT ms bigint,
  OUT holder_owner text, OUT holder_token bigint, OUT holder_mode text, OUT holder_expires_at bigint,
  OUT kind text, OUT permits integer
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_name {{schema}}.names;
  v_now timestamptz;
  v_held bigint;          -- holds taking a slot (a lease, then its lock delay)
  v_used bigint;          -- their weights added up (weighted permits)
  v_weight integer := {{schema}}.asked_weight();
  v_others bigint;        -- of those, not readers
  v_frees_at timestamptz; -- when the first slot frees
  v_past bigint;          -- rows past their lock delay, to delete
  v_mine_token bigint;    -- the owner's own live hold, if any
  v_mine_expires timestamptz;
  v_queued boolean := false;
  v_waiting boolean;
  v_writer_waiting boolean := false;
  v_handed integer := 0;
  v_promoted boolean := false;
  v_ignored text;
BEGIN
  -- Takes the name's row lock, creating the row on first use. No write when
  -- it exists: an attempt never leaves the name unused (it is granted, or
  -- busy because of a hold or line entry), so only grants and the ends of
  -- holds and line entries move touched_at.
  LOOP
    SELECT * INTO v_name FROM {{schema}}.names WHERE name = p_name FOR UPDATE;
    EXIT WHEN FOUND;
    INSERT INTO {{schema}}.names (name, kind, fair, permits, touched_at)
    VALUES (p_name, p_kind, p_fair, p_permits, clock_timestamp())
    ON CONFLICT (name) DO NOTHING;
  END LOOP;
  v_now := clock_timestamp();

  -- The holds, and whether anyone is in line; when someone is, a hand-over
  -- may be due (a lease or lock delay ran out, a stale head): serve the line,
  -- and if that granted anything, read the holds again.
  LOOP
    SELECT count(*) FILTER (WHERE blocked_until > v_now),
           coalesce(sum(weight) FILTER (WHERE blocked_until > v_now), 0),
           count(*) FILTER (WHERE blocked_until > v_now AND mode <> 'read'),
           min(blocked_until) FILTER (WHERE blocked_until > v_now),
           count(*) FILTER (WHERE blocked_until <= v_now),
           max(token) FILTER (WHERE owner = p_owner AND expires_at > v_now),
           max(expires_at) FILTER (WHERE owner = p_owner AND expires_at > v_now),
           EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name)
      INTO v_held, v_used, v_others, v_frees_at, v_past, v_mine_token, v_mine_expires, v_waiting
      FROM {{schema}}.holds WHERE name = p_name;
    EXIT WHEN NOT v_waiting OR v_promoted;
    v_promoted := true;
    v_handed := {{schema}}.promote(p_name, v_now, p_channel, v_name.permits);
    EXIT WHEN v_handed = 0;
  END LOOP;
  IF v_past > 0 THEN
    DELETE FROM {{schema}}.holds WHERE name = p_name AND blocked_until <= v_now;
  END IF;

  IF v_name.kind <> p_kind OR v_name.permits <> p_permits OR v_name.fair <> p_fair THEN
    IF v_held > 0 OR EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name AND stale_at > v_now) THEN
      IF v_name.kind <> p_kind OR (p_kind = 'semaphore' AND v_name.permits <> p_permits) THEN
        IF v_handed = 0 THEN v_ignored := {{schema}}.commit_lazily(); END IF;
        status := 'conflict'; kind := v_name.kind; permits := v_name.permits;
        RETURN;
      END IF;
    ELSE
      UPDATE {{schema}}.names SET kind = p_kind, fair = p_fair, permits = p_permits WHERE name = p_name;
      v_name.permits := p_permits;
    END IF;
  END IF;

  IF v_waiting THEN
    v_queued := EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name AND owner = p_owner);
    v_waiting := EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name AND stale_at > v_now);
    IF p_mode = 'read' AND v_waiting THEN
      v_writer_waiting := EXISTS (SELECT 1 FROM {{schema}}.line
                                   WHERE name = p_name AND mode IN ('exclusive', 'write') AND stale_at > v_now);
    END IF;
  END IF;

  IF v_mine_token IS NOT NULL THEN
    -- Granted before, by a transaction that waited for its flush.
    IF v_handed = 0 THEN v_ignored := {{schema}}.commit_lazily(); END IF;
    status := 'granted'; token := v_mine_token;
    ms := greatest(0, {{schema}}.ms(v_mine_expires - v_now));
    RETURN;
  END IF;

  -- The line was served above, so a live head left in it does not fit: a
  -- permit never passes it, fair or not (a light newcomer would take what a
  -- heavy head waits for).
  IF NOT v_queued AND (NOT v_waiting OR (NOT p_fair AND p_mode <> 'permit'))
     AND {{schema}}.fits(p_mode, v_held, v_used, v_others, v_name.permits, v_writer_waiting, v_weight) THEN
    status := 'granted';
    token := {{schema}}.grant_hold(p_name, p_owner, p_mode, p_ttl_ms, p_lock_delay_ms, v_now);
    ms := p_ttl_ms;
    RETURN;
  END IF;

  status := 'busy';
  ms := CASE WHEN v_frees_at IS NULL THEN 1 ELSE greatest(1, {{schema}}.ms(v_frees_at - v_now)) END;
  IF p_enqueue THEN
    INSERT INTO {{schema}}.line (name, owner, mode, ttl_ms, lock_delay_ms, stale_at)
    VALUES (p_name, p_owner, p_mode, p_ttl_ms, p_lock_delay_ms, v_now + p_queue_ttl_ms * interval '1 ms')
    ON CONFLICT (name, owner) DO UPDATE SET stale_at = excluded.stale_at;
    IF v_waiting AND (SELECT owner FROM {{schema}}.line WHERE name = p_name ORDER BY seq LIMIT 1) <> p_owner THEN
      ms := greatest(ms, p_queue_ttl_ms);
    END IF;
  END IF;

  IF v_handed = 0 THEN v_ignored := {{schema}}.commit_lazily(); END IF;
  SELECT h.owner, h.token, h.mode, floor(extract(epoch FROM h.expires_at) * 1000)::bigint
    INTO holder_owner, holder_token, holder_mode, holder_expires_at
    FROM {{schema}}.holds h WHERE name = p_name AND expires_at > v_now
   ORDER BY expires_at LIMIT 1;
END $$;

CREATE OR REPLACE VIEW {{schema}}.lock_info AS
SELECT n.name, n.kind, n.fair, n.permits, n.last_token::text AS last_token,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', h.owner, 'token', h.token::text, 'mode', h.mode, 'weight', h.weight,
                   'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000),
                   'description', h.description,
                   'since', floor(extract(epoch FROM h.since) * 1000)) ORDER BY h.token)
                   FROM {{schema}}.holds h WHERE h.name = n.name AND h.expires_at > clock_timestamp()), '[]') AS holders,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', l.owner, 'mode', l.mode, 'weight', l.weight, 'description', l.description,
                   'since', floor(extract(epoch FROM l.since) * 1000)) ORDER BY l.seq)
                   FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp()), '[]') AS waiters
  FROM {{schema}}.names n
 WHERE EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name AND h.blocked_until > clock_timestamp())
    OR EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp());
