-- The custody engine's durable state (custody/README.md): operations (a collection, a gas funding) and
-- the transactions each one signs, stored before they are broadcast, so a restart re-sends the same bytes
-- or proves they can never land before anything new is signed.

-- One main wallet per merchant and network (collections go there), one platform gas wallet per network.
CREATE UNIQUE INDEX wallets_one_main_idx ON wallets (merchant_id, network) WHERE kind = 'main';
CREATE UNIQUE INDEX wallets_one_gas_idx ON wallets (network) WHERE kind = 'gas';

CREATE TABLE custody_operations (
  id            text PRIMARY KEY,
  type          text NOT NULL CHECK (type IN ('collection', 'gas_funding')),
  status        text NOT NULL CHECK (status IN ('GAS_FUNDING', 'SWEEPING', 'BROADCAST', 'COMPLETED', 'FAILED')),
  merchant_id   text NOT NULL REFERENCES merchants (id),
  chain         text NOT NULL,
  currency      text NOT NULL,
  -- the wallet the money leaves (its actor sends it) and the one it goes to
  wallet_id     text NOT NULL REFERENCES wallets (id),
  from_address  text NOT NULL,
  to_wallet_id  text NOT NULL REFERENCES wallets (id),
  to_address    text NOT NULL,
  -- base units of the asset
  amount        numeric NOT NULL CHECK (amount > 0 AND amount = trunc(amount)),
  -- a gas funding names the collection it serves; a collection names its gas funding
  parent_id     text REFERENCES custody_operations (id),
  gas_funding_id text REFERENCES custody_operations (id),
  -- what the operation waits for now, in words (for operators)
  waiting_for   text,
  -- how many times the operation was handed to its wallet's actor (each hand-over is a new message)
  kicks         integer NOT NULL DEFAULT 0,
  failure_reason text,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at   timestamptz
);
-- one collection in flight per receive wallet: a second sweep request meets this and gets 409
CREATE UNIQUE INDEX custody_operations_one_sweep_idx ON custody_operations (wallet_id)
  WHERE type = 'collection' AND status NOT IN ('COMPLETED', 'FAILED');
CREATE INDEX custody_operations_open_idx ON custody_operations (created_at) WHERE status NOT IN ('COMPLETED', 'FAILED');
CREATE INDEX custody_operations_merchant_idx ON custody_operations (merchant_id, created_at DESC);

-- Every transaction custody signs, before it is broadcast: its exact bytes, hash and validity window.
--   signed     stored, maybe sent (a crash may come between)
--   broadcast  a node accepted it
--   included   in a block, not final yet
--   final      final and succeeded; the ledger has moved
--   reverted   final and failed on chain (fee burned, nothing moved)
--   dropped    proven never to land (nonce used, expired); a new attempt may be signed
--   rejected   refused by the node before it was ever accepted; never sent again
CREATE TABLE custody_transactions (
  chain         text NOT NULL,
  tx_hash       text NOT NULL,
  operation_id  text NOT NULL REFERENCES custody_operations (id),
  attempt       integer NOT NULL,
  from_address  text NOT NULL,
  to_address    text NOT NULL,
  -- who pays the network fee: the sender, or on Solana the platform gas wallet
  fee_payer     text NOT NULL,
  currency      text NOT NULL,
  amount        numeric NOT NULL,
  raw           text NOT NULL,
  nonce         bigint,
  valid_until   bigint,
  max_fee       numeric NOT NULL,
  status        text NOT NULL CHECK (status IN ('signed', 'broadcast', 'included', 'final', 'reverted', 'dropped', 'rejected')),
  block_number  bigint,
  fee           numeric,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (chain, tx_hash),
  UNIQUE (operation_id, attempt)
);
-- at most one attempt of an operation that may still land
CREATE UNIQUE INDEX custody_transactions_one_live_idx ON custody_transactions (operation_id)
  WHERE status IN ('signed', 'broadcast', 'included', 'final');

-- EVM nonces per sending address, from the database (not eth_getTransactionCount at send time): the
-- wallet's actor reserves the next one in the transaction that stores the signed bytes.
CREATE TABLE evm_nonces (
  chain      text NOT NULL,
  address    text NOT NULL,
  next_nonce bigint NOT NULL,
  PRIMARY KEY (chain, address)
);

-- Custody's own rows in transactions: collections and gas fundings, with their operation.
ALTER TABLE transactions ADD COLUMN operation_id text REFERENCES custody_operations (id);
CREATE INDEX transactions_operation_idx ON transactions (operation_id) WHERE operation_id IS NOT NULL;
