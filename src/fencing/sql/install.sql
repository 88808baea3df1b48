-- The table a PostgreSQL-fenced resource keeps its highest accepted token in:
-- one row per resource (usually the lock name). numeric holds any token a
-- store issues (etcd revisions and clock-floored counters fit in 64 bits,
-- but nothing here depends on that).
CREATE TABLE IF NOT EXISTS baton_fences (
  resource   text PRIMARY KEY,
  token      numeric NOT NULL CHECK (token >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
)
