-- baton PostgreSQL schema, version 1.
--
-- Applied by the driver on first use, inside one transaction that holds an
-- advisory lock, and recorded in {{schema}}.migrations. {{schema}} stands for
-- the schema named by ?schema= in the store URL (default: baton); to apply it
-- by hand, replace it and run the file with psql.
--
-- A lease is a row. Its expiry is the database's clock_timestamp(), read
-- once per operation after the name's row lock is taken: no client clock is
-- ever involved. Every operation that changes a name first locks its row in
-- `names`, so one name's operations run one after another, and a release
-- hands the name to the next in line in the same transaction; pg_notify()
-- then tells that waiter's client (delivered when the transaction commits).

-- One row per name in use, or used within ?fenceTtl= (default 1 h).
CREATE TABLE {{schema}}.names (
  name       text COLLATE "C" PRIMARY KEY,
  kind       text NOT NULL,              -- mutex | rwlock | semaphore
  fair       boolean NOT NULL,
  permits    integer NOT NULL,
  last_token bigint NOT NULL DEFAULT 0,  -- the fencing counter
  touched_at timestamptz NOT NULL        -- last grant, or end of a hold or line entry
);

-- One row per hold (a mutex or write holder, each reader, each permit).
CREATE TABLE {{schema}}.holds (
  name          text COLLATE "C" NOT NULL,
  owner         text NOT NULL,           -- <client id>.<lease id>
  mode          text NOT NULL,           -- exclusive | read | write | permit
  token         bigint NOT NULL,
  expires_at    timestamptz NOT NULL,
  lock_delay_ms integer NOT NULL,
  -- expires_at + lock delay: an expired hold keeps its slot taken until then.
  blocked_until timestamptz NOT NULL,
  PRIMARY KEY (name, owner)
);

-- The waiting line, served in `seq` order; an entry its owner stops
-- refreshing is dropped at stale_at.
CREATE TABLE {{schema}}.line (
  name          text COLLATE "C" NOT NULL,
  owner         text NOT NULL,
  seq           bigint GENERATED ALWAYS AS IDENTITY,
  mode          text NOT NULL,
  ttl_ms        integer NOT NULL,
  lock_delay_ms integer NOT NULL,
  stale_at      timestamptz NOT NULL,
  PRIMARY KEY (name, owner)
);
CREATE INDEX line_order ON {{schema}}.line (name, seq);
-- No index on the columns every operation rewrites (touched_at, last_token,
-- expires_at, blocked_until, stale_at): their updates stay HOT (no index
-- entries per update on the hottest rows). Only the sweep filters on them,
-- and it scans tables that hold just the names in use or recently used.

CREATE FUNCTION {{schema}}.ms(span interval) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT ceil(extract(epoch FROM span) * 1000)::bigint $$;

-- Whether a hold of `mode` fits next to `held` holds, `others` of which are
-- not readers. Exclusive and write holds are alone; a reader joins readers
-- while no writer waits; a permit joins while fewer than `permits` hold.
CREATE FUNCTION {{schema}}.fits(mode text, held bigint, others bigint, permits integer, writer_waiting boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE mode
    WHEN 'read' THEN others = 0 AND NOT writer_waiting
    WHEN 'permit' THEN held < permits
    ELSE held = 0
  END
$$;

-- The next fencing token of a name: one above its counter, and never below
-- the database clock in microseconds. The counter alone would restart from
-- 0 once the sweep has dropped an idle name's row (after ?fenceTtl=), and
-- could go back after a failover to a replica that missed the last commits;
-- the clock floor keeps tokens increasing in both cases, as long as the
-- clock does not step back by more than that window and a name is granted
-- less than once per microsecond on average (a grant takes far longer).
CREATE FUNCTION {{schema}}.grant_hold(
  p_name text, p_owner text, p_mode text, p_ttl_ms integer, p_lock_delay_ms integer, p_now timestamptz
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_token bigint;
BEGIN
  UPDATE {{schema}}.names
     SET last_token = greatest(last_token + 1, floor(extract(epoch FROM p_now) * 1000000)::bigint),
         touched_at = p_now
   WHERE name = p_name
  RETURNING last_token INTO v_token;
  INSERT INTO {{schema}}.holds (name, owner, mode, token, expires_at, lock_delay_ms, blocked_until)
  VALUES (p_name, p_owner, p_mode, v_token, p_now + p_ttl_ms * interval '1 ms', p_lock_delay_ms,
          p_now + (p_ttl_ms::bigint + p_lock_delay_ms) * interval '1 ms');
  RETURN v_token;
END $$;

-- Hands the name to the head of the line while the head fits: one writer or
-- mutex holder, or every reader / permit up to the first that does not fit.
-- Stale heads are dropped on the way. Each new holder's client is told on
-- its own channel: "g|<owner>|<token>|<ttl ms>". The caller holds the name's
-- row lock. Returns the grants made.
CREATE FUNCTION {{schema}}.promote(p_name text, p_now timestamptz, p_channel text, p_permits integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_head record;
  v_held bigint;
  v_others bigint;
  v_token bigint;
  v_granted integer := 0;
BEGIN
  LOOP
    SELECT owner, mode, ttl_ms, lock_delay_ms, stale_at INTO v_head
      FROM {{schema}}.line WHERE name = p_name ORDER BY seq LIMIT 1;
    EXIT WHEN NOT FOUND;
    IF v_head.stale_at > p_now THEN
      SELECT count(*), count(*) FILTER (WHERE mode <> 'read') INTO v_held, v_others
        FROM {{schema}}.holds WHERE name = p_name AND blocked_until > p_now;
      EXIT WHEN NOT {{schema}}.fits(v_head.mode, v_held, v_others, p_permits, false);
    END IF;
    DELETE FROM {{schema}}.line WHERE name = p_name AND owner = v_head.owner;
    CONTINUE WHEN v_head.stale_at <= p_now;
    v_token := {{schema}}.grant_hold(p_name, v_head.owner, v_head.mode, v_head.ttl_ms, v_head.lock_delay_ms, p_now);
    PERFORM pg_notify(p_channel || split_part(v_head.owner, '.', 1),
                      'g|' || v_head.owner || '|' || v_token || '|' || v_head.ttl_ms);
    v_granted := v_granted + 1;
    EXIT WHEN v_head.mode IN ('exclusive', 'write');
  END LOOP;
  RETURN v_granted;
END $$;

-- Lets the transaction commit without waiting for its WAL to reach disk.
-- Only for transactions that grant nothing (a busy attempt, a release that
-- hands nothing over): if the database crashes before the flush, the line
-- entry or the release is lost, which costs a place in line or keeps a
-- released name blocked until its lease runs out, never safety. Every later
-- synchronous commit (any grant, extend or hand-over) flushes the WAL before
-- it, so nothing that depends on one of these is ever kept without it.
-- Grants, extends and hand-overs always wait for the flush: a lost grant
-- could be given again to someone else.
CREATE FUNCTION {{schema}}.commit_lazily() RETURNS text
LANGUAGE sql AS $$ SELECT set_config('synchronous_commit', 'off', true) $$;

-- One attempt to take a name, and a place in its line when busy and asked.
-- Idempotent per owner: an owner that holds the name gets its own hold back
-- (token, lease left); an owner in line keeps its place (entry refreshed).
--   status 'granted'  token, ms = lease ttl
--   status 'busy'     ms = when trying again could succeed without a wake-up:
--                     when a slot frees for the head of the line (or a
--                     newcomer), at least the line entry's ttl for those
--                     behind the head (hand-overs serve them, so a dying
--                     holder does not bring the whole line back at once);
--                     holder_* = one current holder, if any
--   status 'conflict' the name is in use as kind / permits (the caller words it)
-- The common case (a free name, nobody in line) is four statements: the row
-- lock, one read of the holds and the line, and the grant's update and
-- insert. (Plain statements, not SQL helper functions: PL/pgSQL keeps their
-- plans, where a SQL function called for a row would be planned every call.)
CREATE FUNCTION {{schema}}.acquire(
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
           count(*) FILTER (WHERE blocked_until > v_now AND mode <> 'read'),
           min(blocked_until) FILTER (WHERE blocked_until > v_now),
           count(*) FILTER (WHERE blocked_until <= v_now),
           max(token) FILTER (WHERE owner = p_owner AND expires_at > v_now),
           max(expires_at) FILTER (WHERE owner = p_owner AND expires_at > v_now),
           EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name)
      INTO v_held, v_others, v_frees_at, v_past, v_mine_token, v_mine_expires, v_waiting
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

  IF NOT v_queued AND (NOT v_waiting OR NOT p_fair)
     AND {{schema}}.fits(p_mode, v_held, v_others, v_name.permits, v_writer_waiting) THEN
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

-- Ends the owner's hold (only its own, only while its lease runs: an expired
-- hold keeps its slot for the lock delay), or takes it out of the line, then
-- serves the line. p_token NULL: the owner does not know whether it was
-- handed the name (it gave up waiting), so any hold of it goes.
-- The common case (nobody in line) is two statements.
CREATE FUNCTION {{schema}}.release(p_name text, p_owner text, p_token bigint, p_channel text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
  v_permits integer;
  v_released boolean;
  v_waiting boolean := false;
  v_handed integer := 0;
  v_ignored text;
BEGIN
  UPDATE {{schema}}.names SET touched_at = clock_timestamp() WHERE name = p_name RETURNING permits INTO v_permits;
  IF NOT FOUND THEN RETURN false; END IF;
  v_now := clock_timestamp();
  DELETE FROM {{schema}}.holds
   WHERE name = p_name AND owner = p_owner AND expires_at > v_now AND (p_token IS NULL OR token = p_token)
  RETURNING EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name) INTO v_waiting;
  v_released := FOUND;
  IF NOT v_released THEN
    DELETE FROM {{schema}}.line WHERE name = p_name AND owner = p_owner;
    v_waiting := FOUND AND EXISTS (SELECT 1 FROM {{schema}}.line WHERE name = p_name);
  END IF;
  IF v_waiting THEN
    v_handed := {{schema}}.promote(p_name, v_now, p_channel, v_permits);
  END IF;
  IF v_handed = 0 THEN v_ignored := {{schema}}.commit_lazily(); END IF;
  RETURN v_released;
END $$;

-- Turns the owner's write hold into a read hold (same token and lease end),
-- then admits the readers queued behind it.
CREATE FUNCTION {{schema}}.downgrade(p_name text, p_owner text, p_token bigint, p_channel text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
  v_permits integer;
BEGIN
  UPDATE {{schema}}.names SET touched_at = clock_timestamp() WHERE name = p_name RETURNING permits INTO v_permits;
  IF NOT FOUND THEN RETURN false; END IF;
  v_now := clock_timestamp();
  UPDATE {{schema}}.holds SET mode = 'read'
   WHERE name = p_name AND owner = p_owner AND token = p_token AND mode = 'write' AND expires_at > v_now;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM {{schema}}.promote(p_name, v_now, p_channel, v_permits);
  RETURN true;
END $$;

-- Admin: drops every hold of a name (lock delay included) and its line, and
-- grants it to nobody. Holders are told "l|<owner>|<reason>", waiters whose
-- entry was live "r|<owner>": they line up again at once, in the order their
-- attempts arrive, so a dead waiter at the head can never be handed the name.
-- Returns the live holds dropped.
CREATE FUNCTION {{schema}}.force_release(p_name text, p_channel text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
  v_row record;
  v_dropped integer := 0;
BEGIN
  UPDATE {{schema}}.names SET touched_at = clock_timestamp() WHERE name = p_name;
  IF NOT FOUND THEN RETURN 0; END IF;
  v_now := clock_timestamp();
  FOR v_row IN DELETE FROM {{schema}}.holds WHERE name = p_name RETURNING owner, expires_at LOOP
    CONTINUE WHEN v_row.expires_at <= v_now;
    v_dropped := v_dropped + 1;
    PERFORM pg_notify(p_channel || split_part(v_row.owner, '.', 1),
                      'l|' || v_row.owner || '|released by force (forceRelease)');
  END LOOP;
  FOR v_row IN DELETE FROM {{schema}}.line WHERE name = p_name RETURNING owner, stale_at LOOP
    CONTINUE WHEN v_row.stale_at <= v_now;
    PERFORM pg_notify(p_channel || split_part(v_row.owner, '.', 1), 'r|' || v_row.owner);
  END LOOP;
  RETURN v_dropped;
END $$;

-- Bounded state: deletes holds past their lock delay (with a second's
-- margin, so it never races a renewal of a lease just running out) and
-- stale line entries, then the rows of names nobody has held or awaited for
-- p_idle_ms (the fence counter with them; see grant_hold for why tokens
-- still increase). Like every operation, it locks the names' rows first
-- (skipping those a running operation holds) and reads their holds and line
-- only after that, so it never drops a name that has just been used.
-- Returns the names dropped.
CREATE FUNCTION {{schema}}.sweep(p_idle_ms bigint, p_batch integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
  v_cutoff timestamptz := clock_timestamp() - p_idle_ms * interval '1 ms';
  v_names text[];
  v_dropped integer;
BEGIN
  SELECT array_agg(name) INTO v_names FROM (
    SELECT n.name FROM {{schema}}.names n
     WHERE (n.touched_at < v_cutoff
            AND NOT EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name)
            AND NOT EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name))
        OR EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name AND h.blocked_until <= v_now - interval '1 s')
        OR EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at <= v_now)
     LIMIT p_batch
       FOR UPDATE SKIP LOCKED) candidates;
  IF v_names IS NULL THEN RETURN 0; END IF;
  WITH expired AS (
    DELETE FROM {{schema}}.holds WHERE name = ANY (v_names) AND blocked_until <= v_now - interval '1 s' RETURNING name
  ), stale AS (
    DELETE FROM {{schema}}.line WHERE name = ANY (v_names) AND stale_at <= v_now RETURNING name
  )
  UPDATE {{schema}}.names SET touched_at = v_now
   WHERE name IN (SELECT name FROM expired UNION SELECT name FROM stale);
  DELETE FROM {{schema}}.names n
   WHERE n.name = ANY (v_names) AND n.touched_at < v_cutoff
     AND NOT EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name)
     AND NOT EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name);
  GET DIAGNOSTICS v_dropped = ROW_COUNT;
  RETURN v_dropped;
END $$;

-- What inspect() and list() report, one row per name in use: live holders,
-- live waiters in the order they will be served, the last token granted.
-- Tokens travel as text (JSON numbers lose digits past 2^53).
CREATE VIEW {{schema}}.lock_info AS
SELECT n.name, n.kind, n.fair, n.permits, n.last_token::text AS last_token,
       coalesce((SELECT json_agg(json_build_object(
                   'owner', h.owner, 'token', h.token::text, 'mode', h.mode,
                   'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000)) ORDER BY h.token)
                   FROM {{schema}}.holds h WHERE h.name = n.name AND h.expires_at > clock_timestamp()), '[]') AS holders,
       coalesce((SELECT json_agg(json_build_object('owner', l.owner, 'mode', l.mode) ORDER BY l.seq)
                   FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp()), '[]') AS waiters
  FROM {{schema}}.names n
 WHERE EXISTS (SELECT 1 FROM {{schema}}.holds h WHERE h.name = n.name AND h.blocked_until > clock_timestamp())
    OR EXISTS (SELECT 1 FROM {{schema}}.line l WHERE l.name = n.name AND l.stale_at > clock_timestamp());
