-- Rate limits shared by every process of the service: one token bucket per API key (or client address).
-- UNLOGGED: a bucket is worth nothing after a crash (it would be full again within seconds anyway), and a
-- write per request should not cost WAL.
CREATE UNLOGGED TABLE rate_limit_buckets (
  bucket     text PRIMARY KEY,
  tokens     double precision NOT NULL,
  granted    boolean NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX rate_limit_buckets_idle_idx ON rate_limit_buckets (updated_at);
