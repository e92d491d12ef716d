-- Each chain's indexer is a cluster singleton now: the cluster decides which runner runs it. The chain's
-- row in indexer_leases no longer expires; it is the fence. The indexer the cluster starts takes it over
-- at once, and every write transaction checks it FOR SHARE, so a previous holder still running (paused,
-- cut off, not yet stopped) can never commit after the new one started.
ALTER TABLE indexer_leases DROP COLUMN expires_at;
ALTER TABLE indexer_leases ADD COLUMN taken_at timestamptz NOT NULL DEFAULT clock_timestamp();
