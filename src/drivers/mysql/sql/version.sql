-- The schema version this database has (fails with ER_NO_SUCH_TABLE when
-- the schema was never created).
SELECT coalesce(max(version), 0) AS version FROM baton_migrations
