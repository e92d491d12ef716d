-- Merchants onboarded through POST /v1/ai/merchant-apply, their API keys, console handoffs,
-- the platform asset catalogue and per-merchant asset enrollment.

CREATE SEQUENCE merchant_no_seq START 100001;

CREATE TABLE merchants (
  id               text PRIMARY KEY,
  merchant_no      text NOT NULL UNIQUE,
  application_id   text NOT NULL UNIQUE,
  project_name     text NOT NULL,
  -- lower-cased, trimmed project name: one merchant per project name
  project_key      text NOT NULL UNIQUE,
  business_type    text NOT NULL,
  use_case         text NOT NULL,
  website          text,
  repository_url   text,
  contact_channel  text,
  contact_email    text,
  monthly_volume   text,
  webhook_url      text,
  return_url       text,
  preferred_chains text[] NOT NULL DEFAULT '{}',
  ai_provider      text,
  integration_mode text NOT NULL CHECK (integration_mode IN ('checkout', 'exchange_wallet', 'hybrid')),
  -- the application exactly as received, additional properties included
  application      jsonb NOT NULL,
  -- HMAC key for webhook signatures; kept because signing needs it (API keys are stored only hashed)
  webhook_secret   text NOT NULL,
  status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  console_bound_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  merchant_id  text NOT NULL REFERENCES merchants (id),
  -- sha256 of the key; the key itself is shown once and never stored
  key_hash     text NOT NULL UNIQUE,
  key_prefix   text NOT NULL,
  scopes       text[] NOT NULL,
  status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  label        text NOT NULL DEFAULT 'onboarding',
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX api_keys_merchant_idx ON api_keys (merchant_id);

CREATE TABLE console_handoffs (
  id          text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  -- sha256 of the one-time token (the login URL carries the same token)
  token_hash  text NOT NULL UNIQUE,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_handoffs_merchant_idx ON console_handoffs (merchant_id);

CREATE TABLE wallet_asset_policies (
  chain                     text NOT NULL,
  currency                  text NOT NULL,
  display_name              text NOT NULL,
  status                    text NOT NULL CHECK (status IN ('live', 'deposit_live', 'planned', 'disabled')),
  decimals                  integer NOT NULL CHECK (decimals BETWEEN 0 AND 36),
  amount_precision          integer NOT NULL CHECK (amount_precision BETWEEN 0 AND 36),
  gas_asset                 text NOT NULL,
  is_native                 boolean NOT NULL,
  can_deposit               boolean NOT NULL,
  can_collect               boolean NOT NULL,
  can_withdraw              boolean NOT NULL,
  default_for_new_merchants boolean NOT NULL,
  main_key_mode             text NOT NULL,
  receive_key_mode          text NOT NULL,
  collection_mode           text NOT NULL,
  sweep_requires_gas        boolean NOT NULL,
  signing_implemented       boolean NOT NULL,
  metadata                  jsonb NOT NULL DEFAULT '{}',
  updated_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chain, currency)
);

CREATE TABLE merchant_assets (
  merchant_id text NOT NULL REFERENCES merchants (id),
  chain       text NOT NULL,
  currency    text NOT NULL,
  enabled     boolean NOT NULL DEFAULT true,
  source      text NOT NULL,
  enabled_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, chain, currency),
  FOREIGN KEY (chain, currency) REFERENCES wallet_asset_policies (chain, currency)
);

-- Seeded from DECISIONS.md ("Assets"). Token contracts and mints are configuration, not data.
INSERT INTO wallet_asset_policies
  (chain, currency, display_name, status, decimals, amount_precision, gas_asset, is_native,
   can_deposit, can_collect, can_withdraw, default_for_new_merchants,
   main_key_mode, receive_key_mode, collection_mode, sweep_requires_gas, signing_implemented, metadata)
VALUES
  ('TRC20',   'USDT',  'Tether USD (TRON)',       'live',         6,  6, 'TRX', false, true,  true,  true,  true,
   'hd_derived', 'hd_derived', 'gas_funded_sweep', true,  true,  '{"standard": "TRC20"}'),
  ('TRC20',   'TRX',   'TRON',                    'live',         6,  6, 'TRX', true,  true,  false, true,  true,
   'hd_derived', 'hd_derived', 'none',             false, true,  '{"standard": "native"}'),
  ('BEP20',   'USDT',  'Tether USD (BNB Chain)',  'live',         18, 6, 'BNB', false, true,  true,  true,  true,
   'hd_derived', 'hd_derived', 'gas_funded_sweep', true,  true,  '{"standard": "BEP20"}'),
  ('BEP20',   'BNB',   'BNB',                     'live',         18, 8, 'BNB', true,  true,  false, true,  true,
   'hd_derived', 'hd_derived', 'none',             false, true,  '{"standard": "native"}'),
  ('BEP20',   'VELNX', 'VELNX (BNB Chain)',       'live',         18, 8, 'BNB', false, true,  true,  true,  false,
   'hd_derived', 'hd_derived', 'gas_funded_sweep', true,  true,  '{"standard": "BEP20", "custom": true}'),
  ('SOLANA',  'SOL',   'Solana',                  'deposit_live', 9,  9, 'SOL', true,  true,  false, false, true,
   'hd_derived', 'hd_derived', 'none',             false, false, '{"standard": "native"}'),
  ('SOLANA',  'USDT',  'Tether USD (Solana)',     'deposit_live', 6,  6, 'SOL', false, true,  false, false, true,
   'hd_derived', 'hd_derived', 'none',             false, false, '{"standard": "SPL"}'),
  ('POLYGON', 'USDT',  'Tether USD (Polygon)',    'disabled',     6,  6, 'POL', false, false, false, false, false,
   'none',       'none',       'none',             false, false, '{"standard": "ERC20", "sunset": true}');
