-- baton PostgreSQL schema, version 5: an election's leader may be a plain
-- mutex hold (docs/election.md: a `mutex(name)` on the name takes part as a
-- candidate without a value), so observers are told of every exclusive
-- hold's insert and delete, not only of holds carrying a value. Read,
-- write and permit holds are never a leader: they stay silent.

DROP TRIGGER tell_leader_insert ON {{schema}}.holds;
DROP TRIGGER tell_leader_delete ON {{schema}}.holds;

CREATE TRIGGER tell_leader_insert AFTER INSERT ON {{schema}}.holds
  FOR EACH ROW WHEN (NEW.value IS NOT NULL OR NEW.mode = 'exclusive') EXECUTE FUNCTION {{schema}}.tell_leader();
CREATE TRIGGER tell_leader_delete AFTER DELETE ON {{schema}}.holds
  FOR EACH ROW WHEN (OLD.value IS NOT NULL OR OLD.mode = 'exclusive') EXECUTE FUNCTION {{schema}}.tell_leader();
