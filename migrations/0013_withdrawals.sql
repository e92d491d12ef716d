-- Withdrawals (DECISIONS.md "Withdrawals"): the request with its fee snapshot, the human decision on it,
-- and the custody operation that sends it from the merchant's main wallet once approved.

CREATE TABLE withdrawals (
  id                   text PRIMARY KEY,
  merchant_id          text NOT NULL REFERENCES merchants (id),
  out_withdrawal_no    text,
  status               text NOT NULL CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'CANCELLED', 'BROADCAST', 'COMPLETED', 'FAILED')),
  chain                text NOT NULL,
  currency             text NOT NULL,
  -- asset units; amount is gross: net_amount + platform_fee (+ network_fee when it is included)
  amount               numeric NOT NULL CHECK (amount > 0),
  platform_fee         numeric NOT NULL CHECK (platform_fee >= 0),
  platform_fee_bps     integer NOT NULL,
  network_fee          numeric NOT NULL CHECK (network_fee >= 0),
  network_fee_asset    text NOT NULL,
  network_fee_included boolean NOT NULL,
  total_fee            numeric NOT NULL,
  net_amount           numeric NOT NULL CHECK (net_amount > 0),
  fee_model            text NOT NULL,
  fee_policy_version   text NOT NULL,
  to_address           text NOT NULL,
  tx_hash              text,
  failure_reason       text,
  operation_id         text REFERENCES custody_operations (id),
  -- the human decision: who, when, from where, why
  decided_by           text,
  decided_at           timestamptz,
  decided_from         text,
  decision_reason      text,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at          timestamptz
);
CREATE UNIQUE INDEX withdrawals_out_no_idx ON withdrawals (merchant_id, out_withdrawal_no) WHERE out_withdrawal_no IS NOT NULL;
CREATE INDEX withdrawals_list_idx ON withdrawals (merchant_id, created_at DESC, id DESC);
CREATE INDEX withdrawals_pending_idx ON withdrawals (created_at) WHERE status = 'PENDING';

-- Custody sends withdrawals too; SENDING is an operation's state while its transfer is built and tracked.
ALTER TABLE custody_operations DROP CONSTRAINT custody_operations_type_check;
ALTER TABLE custody_operations ADD CONSTRAINT custody_operations_type_check CHECK (type IN ('collection', 'gas_funding', 'withdrawal'));
ALTER TABLE custody_operations ADD COLUMN withdrawal_id text REFERENCES withdrawals (id);

-- Optional per-merchant auto-approval: withdrawals of an asset are approved without a human while the
-- rolling 24 h total approved this way stays within this limit (asset units); NULL (the default) = off.
ALTER TABLE merchant_assets ADD COLUMN auto_approve_daily_limit numeric CHECK (auto_approve_daily_limit > 0);
