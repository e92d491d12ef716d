-- The reference checks of a block's write, cheaper at the same strength. A block of a thousand deposits
-- usually has one merchant: its existence is checked once per distinct merchant, not once per row (a
-- thousand index probes of the same key in each of two triggers were a fifth of a block's write).
CREATE OR REPLACE FUNCTION transactions_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
  SELECT x.merchant_id INTO missing FROM (SELECT DISTINCT merchant_id FROM new_rows) x
  WHERE NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = x.merchant_id)
  LIMIT 1;
  IF missing IS NULL THEN
    SELECT n.id INTO missing FROM new_rows n
    WHERE
       -- a deposit address proves its receive wallet too (its own foreign key): one probe, by the index the
       -- attribution lookup has just warmed, checks both and that wallet, chain and asset all match
       (n.deposit_address_id IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM deposit_addresses d
             WHERE d.wallet_id = n.wallet_id AND d.chain = n.chain AND d.currency = n.currency AND d.id = n.deposit_address_id))
       OR (n.deposit_address_id IS NULL AND n.wallet_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = n.wallet_id))
       OR (n.order_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = n.order_id))
    LIMIT 1;
  END IF;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'transaction % refers to a merchant, wallet, order or deposit address that does not exist (or to a deposit address of another wallet or asset)', missing
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION webhook_events_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
  SELECT x.merchant_id INTO missing FROM (SELECT DISTINCT merchant_id FROM new_rows) x
  WHERE NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = x.merchant_id)
  LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'a webhook event refers to merchant %, which does not exist', missing USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

-- Balances are updated in place by every credit: room left in each page lets PostgreSQL write the new
-- version beside the old one without touching the indexes (a HOT update; the totals are not indexed).
ALTER TABLE ledger_balances SET (fillfactor = 70);
