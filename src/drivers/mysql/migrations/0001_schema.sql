-- baton MySQL / MariaDB schema, version 1.
--
-- Applied by the driver on first use, one client at a time (under the named
-- lock "baton.migrate"), and recorded in baton_migrations. MySQL commits
-- each CREATE on its own (DDL is not transactional there), so every
-- statement here may run again after a half-applied attempt: IF NOT EXISTS
-- throughout. To apply it by hand, run the file against the URL's database.
--
-- Times are microseconds since the epoch by the database's clock
-- (UNIX_TIMESTAMP(NOW(6)) in a UTC session), never a client's. Every
-- operation locks its name's row in baton_names first (SELECT ... FOR
-- UPDATE, an InnoDB row lock), so one name's operations run one after
-- another; names are VARBINARY so that they compare as UTF-8 bytes, the
-- order list() pages in, with no collation folding or trailing-space padding.

-- One row per name in use, or used within ?fenceTtl= (default 1 h).
CREATE TABLE IF NOT EXISTS baton_names (
  name       VARBINARY(256) NOT NULL PRIMARY KEY,
  kind       VARCHAR(10) NOT NULL,         -- mutex | rwlock | semaphore
  fair       BOOLEAN NOT NULL,
  permits    INT NOT NULL,
  last_token BIGINT NOT NULL DEFAULT 0,    -- the fencing counter
  touched_at BIGINT NOT NULL,              -- last grant, or end of a hold or line entry
  changes    BIGINT NOT NULL DEFAULT 0     -- bumped when holders or their values change (election observers read it)
) ENGINE=InnoDB;

-- One row per hold (a mutex or write holder, each reader, each permit).
CREATE TABLE IF NOT EXISTS baton_holds (
  name          VARBINARY(256) NOT NULL,
  owner         VARBINARY(200) NOT NULL,  -- <client id>.<lease id>
  mode          VARCHAR(10) NOT NULL,     -- exclusive | read | write | permit
  weight        INT NOT NULL,
  token         BIGINT NOT NULL,
  expires_at    BIGINT NOT NULL,
  lock_delay_ms INT NOT NULL,
  -- expires_at + lock delay: an expired hold keeps its slot taken until then.
  blocked_until BIGINT NOT NULL,
  description   VARCHAR(256) CHARACTER SET utf8mb4 NULL,
  since         BIGINT NOT NULL,
  value         TEXT CHARACTER SET utf8mb4 NULL,   -- a leader's announced value
  PRIMARY KEY (name, owner)
) ENGINE=InnoDB;

-- The waiting line, served in `seq` order; an entry its owner stops
-- refreshing is dropped at stale_at.
CREATE TABLE IF NOT EXISTS baton_line (
  name          VARBINARY(256) NOT NULL,
  owner         VARBINARY(200) NOT NULL,
  seq           BIGINT NOT NULL AUTO_INCREMENT,
  mode          VARCHAR(10) NOT NULL,
  weight        INT NOT NULL,
  ttl_ms        INT NOT NULL,
  lock_delay_ms INT NOT NULL,
  stale_at      BIGINT NOT NULL,
  description   VARCHAR(256) CHARACTER SET utf8mb4 NULL,
  since         BIGINT NOT NULL,
  value         TEXT CHARACTER SET utf8mb4 NULL,
  PRIMARY KEY (name, owner),
  UNIQUE KEY line_seq (seq),
  KEY line_order (name, seq)
) ENGINE=InnoDB;

-- Wake-ups for one client, written in the transaction that made them due
-- (a hand-over, a forced release) and read by that client's poller: the
-- store's stand-in for PostgreSQL's NOTIFY (docs/stores/mysql.md says why).
-- Messages are WakeRoutes' ("g|<owner>|<token>|<ttl ms>", ...).
CREATE TABLE IF NOT EXISTS baton_wakes (
  id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  client     VARBINARY(64) NOT NULL,
  message    TEXT CHARACTER SET utf8mb4 NOT NULL,
  created_at BIGINT NOT NULL,
  KEY wakes_client (client, id)
) ENGINE=InnoDB;
