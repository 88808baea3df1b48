-- Wake-ups, each for one client's poller. ? rows of (client, message, created_at µs).
INSERT INTO baton_wakes (client, message, created_at) VALUES ?
