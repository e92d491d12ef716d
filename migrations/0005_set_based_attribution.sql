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

-- Attribution writes transactions and postings with receive-wallet, order and deposit-address ids it has
-- just read in the same transaction, and those parents are never deleted (the triggers below refuse it).
-- A foreign key re-checked each written row with a random probe into a table of millions of rows (about
-- 40 % of a block's write time at 1M addresses), so those per-row checks go; the merchant ones stay.
ALTER TABLE transactions
  DROP CONSTRAINT transactions_wallet_id_fkey,
  DROP CONSTRAINT transactions_order_id_fkey,
  DROP CONSTRAINT transactions_deposit_address_id_fkey;
ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_wallet_id_fkey;

CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are never deleted: ledger entries and transactions refer to them', TG_TABLE_NAME;
END
$$;
CREATE TRIGGER wallets_never_deleted BEFORE DELETE OR TRUNCATE ON wallets
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_delete();
CREATE TRIGGER orders_never_deleted BEFORE DELETE OR TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_delete();
CREATE TRIGGER deposit_addresses_never_deleted BEFORE DELETE OR TRUNCATE ON deposit_addresses
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_delete();
