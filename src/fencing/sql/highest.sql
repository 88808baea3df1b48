-- The highest token accepted for $1 (evidence for a refusal).
SELECT token::text FROM baton_fences WHERE resource = $1
