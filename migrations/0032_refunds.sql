-- Refunds (docs/guides/refunds.md): a merchant refunds what a customer paid to an order, in the asset paid.
-- The amount is locked (available → locked, kind refund_lock) when the refund is created; the customer names
-- the destination on a hosted claim page, which creates a withdrawal of kind `refund` taking over that lock.
-- The claim link's token is a credential: only its SHA-256 hash is stored.

CREATE TABLE refunds (
  id                text PRIMARY KEY,
  merchant_id       text NOT NULL REFERENCES merchants (id),
  order_id          text NOT NULL REFERENCES orders (id),
  status            text NOT NULL CHECK (status IN ('PENDING_CLAIM', 'CLAIMED', 'COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED')),
  chain             text NOT NULL,
  currency          text NOT NULL,
  -- asset units, at the asset's precision: what is locked and what the refund's withdrawal sends (gross)
  amount            numeric NOT NULL CHECK (amount > 0),
  -- "at a stated rate": the amount asked in the order's currency and the rate (asset units per order unit)
  order_amount      numeric CHECK (order_amount > 0),
  rate              numeric CHECK (rate > 0),
  reason            text,
  claim_token_hash  text NOT NULL UNIQUE,
  claim_expires_at  timestamptz NOT NULL,
  to_address        text,
  -- (SET NULL: only a devnet reset deletes withdrawals, and refunds go with them)
  withdrawal_id     text UNIQUE REFERENCES withdrawals (id) ON DELETE SET NULL,
  failure_reason    text,
  -- who asked for it (`api_key:<id>`, `console_user:<login>`), and the console user behind it, who may not
  -- approve its withdrawal
  created_by        text NOT NULL,
  created_by_user_id text,
  created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  claimed_at        timestamptz,
  finished_at       timestamptz,
  CHECK ((order_amount IS NULL) = (rate IS NULL))
);
CREATE INDEX refunds_order_idx ON refunds (order_id, created_at);
CREATE INDEX refunds_list_idx ON refunds (merchant_id, created_at DESC, id DESC);
CREATE INDEX refunds_claim_due_idx ON refunds (claim_expires_at) WHERE status = 'PENDING_CLAIM';

-- A withdrawal is a merchant's own payout or a refund's (its destination chosen by the customer).
ALTER TABLE withdrawals
  ADD COLUMN kind text NOT NULL DEFAULT 'withdrawal' CHECK (kind IN ('withdrawal', 'refund')),
  ADD COLUMN refund_id text REFERENCES refunds (id),
  ADD CHECK ((kind = 'refund') = (refund_id IS NOT NULL));
CREATE UNIQUE INDEX withdrawals_refund_idx ON withdrawals (refund_id) WHERE refund_id IS NOT NULL;
