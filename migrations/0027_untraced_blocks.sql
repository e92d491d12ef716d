-- BEP20 blocks whose contract calls the node could not trace (a full node keeps the state to trace only its
-- newest ~128 blocks): their token logs and top-level BNB transfers are credited as usual, but BNB sent by
-- contracts in them is not seen. They are recorded here in the transaction that writes the block, alerted
-- on (/health, metrics), named by reconciliation, and cleared by a rescan against a node that can trace
-- them (npm run indexer -- --chain BEP20 --rescan-untraced) — never a reason to stop every deposit.
CREATE TABLE untraced_blocks (
  chain        text NOT NULL,
  number       bigint NOT NULL,
  hash         text NOT NULL,
  reason       text NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- read again, traced in full, by a rescan
  rescanned_at timestamptz,
  PRIMARY KEY (chain, number)
);
CREATE INDEX untraced_blocks_open_idx ON untraced_blocks (chain, number) WHERE rescanned_at IS NULL;
