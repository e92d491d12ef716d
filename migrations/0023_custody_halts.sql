-- A transfer whose fate the chain cannot yet prove halts its wallet instead of being signed again: an EVM
-- nonce used in final state by none of custody's transactions that a node can find, a TRON or Solana
-- validity window whose blocks cannot all be read, a transaction found in a block that lookups miss. The
-- operation keeps its place in the wallet's actor (nothing else leaves that wallet), retries, and says
-- why here; /health is degraded while any open operation is halted (custody/transfer-sender.ts).
ALTER TABLE custody_operations ADD COLUMN halted_reason text, ADD COLUMN halted_at timestamptz;

-- Custody's transactions by sender and nonce: which of them used a nonce that final state shows used.
CREATE INDEX custody_transactions_nonce_idx ON custody_transactions (chain, lower(from_address), nonce) WHERE nonce IS NOT NULL;
