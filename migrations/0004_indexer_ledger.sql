-- Block indexing (cursor, recent block window, leases), the double-entry ledger and balance projections.

-- Watch lists follow new wallets by this sequence (cheap "what is new since N" polling, any process).
ALTER TABLE wallets ADD COLUMN seq bigserial;
CREATE UNIQUE INDEX wallets_seq_idx ON wallets (seq);

CREATE TABLE indexer_cursors (
  chain        text PRIMARY KEY,
  block_number bigint NOT NULL,
  block_hash   text NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The recent blocks each indexer has written: their hashes detect a reorg by the parent-hash chain.
CREATE TABLE indexed_blocks (
  chain       text NOT NULL,
  number      bigint NOT NULL,
  hash        text NOT NULL,
  parent_hash text NOT NULL,
  block_time  timestamptz,
  PRIMARY KEY (chain, number)
);

-- One active indexer per chain: a lease row renewed by its holder; a waiting process takes it over
-- once it expires.
CREATE TABLE indexer_leases (
  chain      text PRIMARY KEY,
  holder     text NOT NULL,
  expires_at timestamptz NOT NULL
);

ALTER TABLE transactions
  ADD COLUMN detected_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  ADD COLUMN confirmed_at timestamptz,
  ADD COLUMN reversed_at  timestamptz,
  -- whether this payment counts towards its order (an accepted asset)
  ADD COLUMN counted      boolean NOT NULL DEFAULT false,
  -- the payment's value in the order's currency, when it counts
  ADD COLUMN order_value  numeric;
CREATE INDEX transactions_pending_idx ON transactions (chain, block_number) WHERE status = 'pending';
CREATE INDEX transactions_to_idx ON transactions (to_address);

-- Double-entry ledger: every movement is one entry whose postings sum to zero per asset; never updated
-- or deleted (a reversal is a new entry).
CREATE TABLE ledger_entries (
  id         bigserial PRIMARY KEY,
  kind       text NOT NULL,
  reference  text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE ledger_postings (
  entry_id    bigint NOT NULL REFERENCES ledger_entries (id),
  account     text NOT NULL CHECK (account IN ('chain', 'uncollected', 'available', 'locked', 'fees', 'gas')),
  merchant_id text REFERENCES merchants (id),
  wallet_id   text REFERENCES wallets (id),
  chain       text NOT NULL,
  currency    text NOT NULL,
  amount      numeric NOT NULL
);
CREATE INDEX ledger_postings_entry_idx ON ledger_postings (entry_id);
CREATE INDEX ledger_postings_merchant_idx ON ledger_postings (merchant_id, chain, currency);

-- Projection of the ledger per merchant and asset, kept in the same transaction as the postings.
CREATE TABLE merchant_balances (
  merchant_id text NOT NULL REFERENCES merchants (id),
  chain       text NOT NULL,
  currency    text NOT NULL,
  uncollected numeric NOT NULL DEFAULT 0,
  available   numeric NOT NULL DEFAULT 0,
  locked      numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (merchant_id, chain, currency)
);

-- Attribution looks up what a receive wallet is for, block after block.
CREATE INDEX deposit_addresses_wallet_idx ON deposit_addresses (wallet_id);
CREATE INDEX order_assets_wallet_idx ON order_assets (wallet_id);
