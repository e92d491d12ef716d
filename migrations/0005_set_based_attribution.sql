-- Set-based attribution: a block's deposits, their ledger entries and their events are written by a few
-- INSERT … SELECT statements instead of row-by-row work in the application.

-- The SQL twin of newId() in src/ids.ts (prefix, "_", 24 characters of the same base32 alphabet) for rows
-- created inside a statement, such as the events of the deposits an UPDATE just confirmed.
CREATE FUNCTION facet_id(prefix text) RETURNS text
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT prefix || '_' || translate(
    substr(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), 1, 24),
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
    '0123456789abcdefghjkmnpqrstvwxyz0123456789abcdefghjkmnpqrstvwxyz')
$$;

-- A receive wallet holds one deposit address per asset: attribution joins on exactly that.
DROP INDEX deposit_addresses_wallet_idx;
CREATE UNIQUE INDEX deposit_addresses_wallet_asset_idx ON deposit_addresses (wallet_id, chain, currency);

-- Deposit-address and order transactions are disjoint: each index only holds the rows it serves.
DROP INDEX transactions_deposit_address_idx;
CREATE INDEX transactions_deposit_address_idx ON transactions (deposit_address_id, created_at DESC)
  WHERE deposit_address_id IS NOT NULL;
DROP INDEX transactions_order_idx;
CREATE INDEX transactions_order_idx ON transactions (order_id) WHERE order_id IS NOT NULL;

-- Delivery problems (failing or dead events, what operators list and replay) are a sliver of the outbox:
-- one partial index for them instead of two full ones every event of every deposit had to update.
DROP INDEX webhook_events_created_idx;
DROP INDEX webhook_events_merchant_status_idx;
CREATE INDEX webhook_events_problems_idx ON webhook_events (merchant_id, created_at)
  WHERE status = 'dead' OR (status = 'pending' AND last_error IS NOT NULL);

-- The body of `wallet.deposit.confirmed`, field by field in wire order: to_json() of this row type is the
-- event's compact JSON (the receiver's WalletDepositWebhook schema in src/webhooks/receiver.ts mirrors it).
CREATE TYPE wallet_deposit_body AS (
  event              text,
  deposit_address_id text,
  external_user_id   text,
  wallet_id          text,
  chain              text,
  currency           text,
  amount             text,
  tx_hash            text,
  from_address       text,
  to_address         text,
  event_index        integer,
  block_number       bigint,
  confirmations      integer,
  confirmed_at       text,
  created_at         text
);

-- Foreign keys on the attribution tables, checked per statement instead of per row. A declared foreign key
-- runs one lookup and one row lock per written row per key (a third of a block's write time at 1,000
-- deposits); these triggers check a whole statement's new rows in one query each, and the parents can
-- never disappear: their rows are never deleted and their ids never change (the triggers at the end).
ALTER TABLE transactions
  DROP CONSTRAINT transactions_merchant_id_fkey,
  DROP CONSTRAINT transactions_wallet_id_fkey,
  DROP CONSTRAINT transactions_order_id_fkey,
  DROP CONSTRAINT transactions_deposit_address_id_fkey;
ALTER TABLE ledger_postings
  DROP CONSTRAINT ledger_postings_entry_id_fkey,
  DROP CONSTRAINT ledger_postings_merchant_id_fkey,
  DROP CONSTRAINT ledger_postings_wallet_id_fkey;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_merchant_id_fkey;

CREATE FUNCTION transactions_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
  SELECT n.id INTO missing FROM new_rows n
  WHERE NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = n.merchant_id)
     -- a deposit address proves its receive wallet too (its own foreign key): one probe, by the index the
     -- attribution lookup has just warmed, checks both and that wallet, chain and asset all match
     OR (n.deposit_address_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM deposit_addresses d
           WHERE d.wallet_id = n.wallet_id AND d.chain = n.chain AND d.currency = n.currency AND d.id = n.deposit_address_id))
     OR (n.deposit_address_id IS NULL AND n.wallet_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = n.wallet_id))
     OR (n.order_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = n.order_id))
  LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'transaction % refers to a merchant, wallet, order or deposit address that does not exist (or to a deposit address of another wallet or asset)', missing
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER transactions_references AFTER INSERT ON transactions
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transactions_references_exist();

CREATE FUNCTION ledger_postings_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing bigint;
BEGIN
  SELECT n.entry_id INTO missing FROM new_rows n
  WHERE NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.id = n.entry_id)
     OR (n.merchant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = n.merchant_id))
     OR (n.wallet_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = n.wallet_id))
  LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'a posting of ledger entry % refers to an entry, merchant or wallet that does not exist', missing
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER ledger_postings_references AFTER INSERT ON ledger_postings
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_postings_references_exist();

CREATE FUNCTION webhook_events_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
  SELECT n.id INTO missing FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = n.merchant_id) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'webhook event % refers to a merchant that does not exist', missing USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER webhook_events_references AFTER INSERT ON webhook_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_events_references_exist();

-- Those reference columns are never updated after insert (updates touch status, confirmations, counters).
-- The parents' side: never deleted, ids never changed; and the ledger itself is append-only.
CREATE FUNCTION refuse_parent_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are never deleted and their ids never change (the ledger is append-only and refers to them)', TG_TABLE_NAME;
END
$$;
CREATE TRIGGER merchants_kept BEFORE DELETE OR TRUNCATE OR UPDATE OF id ON merchants
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
CREATE TRIGGER wallets_kept BEFORE DELETE OR TRUNCATE OR UPDATE OF id ON wallets
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
CREATE TRIGGER orders_kept BEFORE DELETE OR TRUNCATE OR UPDATE OF id ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
CREATE TRIGGER deposit_addresses_kept BEFORE DELETE OR TRUNCATE OR UPDATE OF id ON deposit_addresses
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
CREATE TRIGGER ledger_entries_kept BEFORE DELETE OR TRUNCATE OR UPDATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
CREATE TRIGGER ledger_postings_kept BEFORE DELETE OR TRUNCATE OR UPDATE ON ledger_postings
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();
