-- The ledger as one row per movement (DECISIONS.md, the TigerBeetle model): a transfer moves an amount of
-- one asset, in base units, from a debit account to a credit account, so every row balances by
-- construction. A movement with several legs is several transfers in one database transaction with a
-- shared reference. Append-only: a reversal is a new transfer the other way.
--
-- Accounts are named, per asset (chain, currency): `chain` (the outside world), `fees`, `gas` (the
-- platform's), `uncollected:<receive wallet id>`, `available:<merchant id>`, `locked:<merchant id>`.
CREATE TABLE ledger_transfers (
  id             bigserial PRIMARY KEY,
  debit_account  text NOT NULL,
  credit_account text NOT NULL CHECK (credit_account <> debit_account),
  chain          text NOT NULL,
  currency       text NOT NULL,
  -- base units of the asset (an integer)
  amount         numeric NOT NULL CHECK (amount > 0 AND amount = trunc(amount)),
  kind           text NOT NULL,
  -- what caused it: a transaction, a collection, a withdrawal
  reference      text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ledger_transfers_reference_idx ON ledger_transfers (reference);

-- Each account's debits and credits posted: the projection of the transfers, written in the same statement
-- (a test proves it equal to their sums). Merchant-side accounts carry their merchant and wallet.
CREATE TABLE ledger_balances (
  account        text NOT NULL,
  chain          text NOT NULL,
  currency       text NOT NULL,
  kind           text NOT NULL CHECK (kind IN ('chain', 'fees', 'gas', 'uncollected', 'available', 'locked')),
  merchant_id    text,
  wallet_id      text,
  debits_posted  numeric NOT NULL DEFAULT 0,
  credits_posted numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (account, chain, currency)
);
CREATE INDEX ledger_balances_merchant_idx ON ledger_balances (merchant_id, chain, currency) WHERE merchant_id IS NOT NULL;

-- The old entries and postings, one transfer each (a deposit: chain → uncollected of its receive wallet;
-- a reversal the other way), in base units at the asset's decimals.
INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference, created_at)
SELECT CASE WHEN u.amount > 0 THEN 'chain' ELSE 'uncollected:' || u.wallet_id END,
       CASE WHEN u.amount > 0 THEN 'uncollected:' || u.wallet_id ELSE 'chain' END,
       u.chain, u.currency, trim_scale(abs(u.amount) * (10::numeric ^ a.decimals)), e.kind, e.reference, e.created_at
FROM ledger_entries e
JOIN ledger_postings u ON u.entry_id = e.id AND u.account = 'uncollected'
JOIN wallet_asset_policies a ON a.chain = u.chain AND a.currency = u.currency
ORDER BY e.id;

INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, wallet_id, debits_posted, credits_posted)
SELECT s.account, s.chain, s.currency, split_part(s.account, ':', 1), w.merchant_id, w.id, sum(s.debit), sum(s.credit)
FROM (
  SELECT debit_account AS account, chain, currency, amount AS debit, 0 AS credit FROM ledger_transfers
  UNION ALL
  SELECT credit_account, chain, currency, 0, amount FROM ledger_transfers
) s
LEFT JOIN wallets w ON s.account = 'uncollected:' || w.id
GROUP BY s.account, s.chain, s.currency, w.merchant_id, w.id;

DROP TABLE ledger_postings;
DROP TABLE ledger_entries;
DROP FUNCTION ledger_postings_references_exist();
DROP TABLE merchant_balances;

-- What a merchant holds per asset, in the asset's units, from the account projection.
CREATE VIEW merchant_balances AS
SELECT b.merchant_id, b.chain, b.currency,
       trim_scale(coalesce(sum(b.credits_posted - b.debits_posted) FILTER (WHERE b.kind = 'uncollected'), 0) / (10::numeric ^ a.decimals)) AS uncollected,
       trim_scale(coalesce(sum(b.credits_posted - b.debits_posted) FILTER (WHERE b.kind = 'available'), 0) / (10::numeric ^ a.decimals)) AS available,
       trim_scale(coalesce(sum(b.credits_posted - b.debits_posted) FILTER (WHERE b.kind = 'locked'), 0) / (10::numeric ^ a.decimals)) AS locked
FROM ledger_balances b JOIN wallet_asset_policies a ON a.chain = b.chain AND a.currency = b.currency
WHERE b.merchant_id IS NOT NULL
GROUP BY b.merchant_id, b.chain, b.currency, a.decimals;

-- Append-only, like the entries before them.
CREATE TRIGGER ledger_transfers_kept BEFORE DELETE OR TRUNCATE OR UPDATE ON ledger_transfers
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_change();

-- A merchant-side account must belong to an existing merchant and wallet (checked per statement).
CREATE FUNCTION ledger_balances_references_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE missing text;
BEGIN
  SELECT n.account INTO missing FROM new_rows n
  WHERE (n.merchant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM merchants m WHERE m.id = n.merchant_id))
     OR (n.wallet_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = n.wallet_id AND w.merchant_id IS NOT DISTINCT FROM n.merchant_id))
  LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'ledger account % refers to a merchant or wallet that does not exist (or to a wallet of another merchant)', missing
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER ledger_balances_references AFTER INSERT ON ledger_balances
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_balances_references_exist();
