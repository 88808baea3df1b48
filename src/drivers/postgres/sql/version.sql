-- version: the schema version this database has (raises undefined_table
-- when the schema was never created).
SELECT coalesce(max(version), 0) AS version FROM {{schema}}.migrations
