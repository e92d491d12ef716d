-- Receive wallets derived from the HD master secret, checkout orders, long-term deposit addresses,
-- idempotency records, the webhook outbox and the transactions ledger view.

-- Each merchant derives from its own BIP-44 account; account 0 is the platform's (gas wallets).
CREATE SEQUENCE merchant_key_account_seq START 1;
ALTER TABLE merchants ADD COLUMN key_account integer UNIQUE;
UPDATE merchants SET key_account = nextval('merchant_key_account_seq') WHERE key_account IS NULL;
ALTER TABLE merchants ALTER COLUMN key_account SET DEFAULT nextval('merchant_key_account_seq');
ALTER TABLE merchants ALTER COLUMN key_account SET NOT NULL;

-- The next unused address index per account and key family; incremented atomically, so two processes
-- never hand out the same index.
CREATE TABLE key_index_counters (
  key_account integer NOT NULL,
  family      text NOT NULL CHECK (family IN ('TRON', 'EVM', 'SOLANA')),
  next_index  integer NOT NULL DEFAULT 0,
  PRIMARY KEY (key_account, family)
);

CREATE SEQUENCE wallet_no_seq START 1000001;

-- Every address the service controls. A receive wallet serves one order, or one external user on one
-- network (all assets of that network share it).
CREATE TABLE wallets (
  id               text PRIMARY KEY,
  wallet_no        text NOT NULL UNIQUE DEFAULT ('W' || nextval('wallet_no_seq')),
  merchant_id      text REFERENCES merchants (id),
  kind             text NOT NULL CHECK (kind IN ('main', 'receive', 'gas')),
  purpose          text NOT NULL CHECK (purpose IN ('order', 'deposit', 'main', 'gas')),
  network          text NOT NULL,
  family           text NOT NULL CHECK (family IN ('TRON', 'EVM', 'SOLANA')),
  address          text NOT NULL,
  derivation_path  text NOT NULL,
  key_account      integer NOT NULL,
  address_index    integer NOT NULL,
  external_user_id text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (network, address),
  UNIQUE (family, key_account, address_index)
);
CREATE UNIQUE INDEX wallets_deposit_user_idx ON wallets (merchant_id, external_user_id, network) WHERE purpose = 'deposit';
CREATE INDEX wallets_merchant_idx ON wallets (merchant_id);

CREATE TABLE orders (
  id               text PRIMARY KEY,
  merchant_id      text NOT NULL REFERENCES merchants (id),
  out_trade_no     text NOT NULL DEFAULT '',
  status           text NOT NULL CHECK (status IN ('PENDING', 'CONFIRMING', 'PAID', 'EXPIRED', 'PARTIALLY_PAID')),
  amount           numeric NOT NULL CHECK (amount > 0),
  currency         text NOT NULL,
  chain            text NOT NULL,
  checkout_mode    text NOT NULL CHECK (checkout_mode IN ('single_asset', 'multi_asset')),
  paid_amount      numeric NOT NULL DEFAULT 0,
  exchange_rate    numeric,
  pay_address      text NOT NULL,
  wallet_id        text NOT NULL REFERENCES wallets (id),
  notify_url       text,
  return_url       text,
  merchant_user_id text,
  product_name     text,
  product_desc     text,
  metadata         jsonb,
  tx_hash          text,
  late_payment     boolean NOT NULL DEFAULT false,
  expire_at        timestamptz NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX orders_merchant_list_idx ON orders (merchant_id, created_at DESC, id DESC);
CREATE INDEX orders_expiry_idx ON orders (expire_at) WHERE status = 'PENDING';

-- What an order can be paid with: one row per accepted asset, with its own address and amount.
CREATE TABLE order_assets (
  order_id    text NOT NULL REFERENCES orders (id),
  position    integer NOT NULL,
  chain       text NOT NULL,
  currency    text NOT NULL,
  wallet_id   text NOT NULL REFERENCES wallets (id),
  pay_address text NOT NULL,
  amount      numeric NOT NULL CHECK (amount > 0),
  -- payment URI for the QR code, fixed at creation
  pay_qrcode  text,
  PRIMARY KEY (order_id, chain, currency)
);
CREATE INDEX order_assets_address_idx ON order_assets (pay_address);

CREATE TABLE deposit_addresses (
  id               text PRIMARY KEY,
  merchant_id      text NOT NULL REFERENCES merchants (id),
  external_user_id text NOT NULL,
  chain            text NOT NULL,
  currency         text NOT NULL,
  wallet_id        text NOT NULL REFERENCES wallets (id),
  address          text NOT NULL,
  label            text,
  status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active')),
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (merchant_id, external_user_id, chain, currency)
);
CREATE INDEX deposit_addresses_list_idx ON deposit_addresses (merchant_id, created_at DESC, id DESC);
CREATE INDEX deposit_addresses_address_idx ON deposit_addresses (address);

-- X-Service-Idempotency-Key records, scoped to merchant and endpoint.
CREATE TABLE idempotency_keys (
  merchant_id  text NOT NULL REFERENCES merchants (id),
  endpoint     text NOT NULL,
  key          text NOT NULL,
  request_hash text NOT NULL,
  status_code  integer NOT NULL,
  resource_id  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, endpoint, key)
);

-- Webhook outbox: written in the same transaction as the change it announces. The body is serialized
-- once, here; delivery signs and sends exactly these bytes.
CREATE TABLE webhook_events (
  id              text PRIMARY KEY,
  merchant_id     text NOT NULL REFERENCES merchants (id),
  event           text NOT NULL,
  idempotency_key text NOT NULL,
  order_id        text,
  destination     text,
  body            text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (merchant_id, idempotency_key)
);
CREATE INDEX webhook_events_created_idx ON webhook_events (created_at);

-- On-chain movements attributed to merchants (deposits now; withdrawals, collections, gas funding later).
CREATE TABLE transactions (
  id                 text PRIMARY KEY,
  merchant_id        text NOT NULL REFERENCES merchants (id),
  type               text NOT NULL CHECK (type IN ('deposit', 'withdrawal', 'collection', 'gas_funding')),
  status             text NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed', 'reversed')),
  chain              text NOT NULL,
  currency           text NOT NULL,
  amount             numeric NOT NULL,
  tx_hash            text NOT NULL,
  event_index        integer NOT NULL,
  from_address       text,
  to_address         text NOT NULL,
  block_number       bigint,
  block_hash         text,
  confirmations      integer NOT NULL DEFAULT 0,
  wallet_id          text REFERENCES wallets (id),
  order_id           text REFERENCES orders (id),
  deposit_address_id text REFERENCES deposit_addresses (id),
  withdrawal_id      text,
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- tx_hash first: the same index serves lookups by hash
  UNIQUE (tx_hash, event_index, to_address, chain)
);
CREATE INDEX transactions_merchant_idx ON transactions (merchant_id, created_at DESC, id DESC);
CREATE INDEX transactions_deposit_address_idx ON transactions (deposit_address_id, created_at DESC);
CREATE INDEX transactions_order_idx ON transactions (order_id);
