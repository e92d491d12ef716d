-- Which chain each indexed chain is: its genesis hash, recorded the first time it is seen. A node that
-- answers with another genesis (another network, or a devnet started afresh) is refused instead of read
-- as a very deep reorg.
CREATE TABLE chain_identities (
  chain        text PRIMARY KEY,
  network      text NOT NULL CHECK (network IN ('devnet', 'mainnet')),
  genesis_hash text NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
