-- Payment links (issue #35): a reusable hosted page (/pay/{id}) that creates a checkout order for each
-- visit, through the ordinary order path. The link keeps what every order it creates copies: the product,
-- a fixed amount or the bounds of a customer-chosen one, the assets, the orders' expiry, the merchant's
-- URLs and metadata. Its status is derived, never stored: inactive (deactivated_at set), completed (its
-- uses reached max_uses; a use is an order of the link that did not end EXPIRED), expired (past
-- expires_at), else active.
CREATE TABLE payment_links (
  id                   text PRIMARY KEY,
  merchant_id          text NOT NULL REFERENCES merchants (id),
  product_name         text NOT NULL,
  product_desc         text,
  -- a fixed amount, or bounds (at least one) of the amount the customer chooses, in the link's currency
  amount               numeric CHECK (amount > 0),
  min_amount           numeric CHECK (min_amount > 0),
  max_amount           numeric CHECK (max_amount > 0),
  currency             text NOT NULL,
  chain                text,
  checkout_mode        text CHECK (checkout_mode IN ('single_asset', 'multi_asset')),
  -- [{chain, currency}] as the merchant listed them (upper case), or NULL: the merchant's usable assets
  accepted_assets      jsonb,
  max_uses             integer CHECK (max_uses >= 1),
  expires_at           timestamptz,
  order_expire_minutes integer NOT NULL CHECK (order_expire_minutes BETWEEN 1 AND 1440),
  return_url           text,
  notify_url           text,
  metadata             jsonb,
  deactivated_at       timestamptz,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((amount IS NULL) <> (min_amount IS NULL AND max_amount IS NULL)),
  CHECK (min_amount IS NULL OR max_amount IS NULL OR min_amount <= max_amount)
);
CREATE INDEX payment_links_merchant_idx ON payment_links (merchant_id, created_at DESC, id DESC);

-- the link an order was created from (NULL: an order of the API)
ALTER TABLE orders ADD COLUMN payment_link_id text REFERENCES payment_links (id);
CREATE INDEX orders_payment_link_idx ON orders (payment_link_id, created_at DESC) WHERE payment_link_id IS NOT NULL;
