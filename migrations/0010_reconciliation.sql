-- Reconciliation against the chain: each run compares, for every receive address and asset of a chain, the
-- balance in the chain's final state with what the ledger explains, and keeps what it found. The latest run
-- of a chain is what /health and /metrics report.
CREATE TABLE reconciliation_runs (
  id          bigserial PRIMARY KEY,
  chain       text NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- the highest final height a balance was read at
  height      bigint,
  checked     integer NOT NULL,
  -- balances not compared because the chain's indexer had not yet read that far
  skipped     integer NOT NULL,
  -- [{address, currency, on_chain, explained, difference, from_block, to_block}]
  differences jsonb NOT NULL
);
CREATE INDEX reconciliation_runs_latest_idx ON reconciliation_runs (chain, id DESC);

-- Where a chain's indexing started: the first block a missed transfer can be in.
ALTER TABLE indexer_cursors ADD COLUMN started_at_block bigint;
UPDATE indexer_cursors SET started_at_block = block_number;
