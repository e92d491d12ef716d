-- Network fees are capped (custody/README.md "Fee caps"): nothing is signed while the node's price would
-- make a transfer cost more than its cap; the operation waits for the price to fall and, after
-- FACET_FEE_WAIT_MINUTES, fails (a withdrawal is unlocked). Since when it has waited, across restarts:
ALTER TABLE custody_operations ADD COLUMN fee_capped_since timestamptz;

-- A merchant's available and locked balances never go below zero, whatever the code does: a withdrawal
-- that would book more than it locked fails its transaction instead. A trigger on the row as written, not a
-- CHECK: the balance upsert's proposed row carries only the delta, and a CHECK would judge that. Its WHEN
-- runs without calling the function for every other row (the indexer's deposits touch `uncollected`).
-- (If a balance is negative already, the service still starts, and the next change to that row fails:
-- SELECT * FROM ledger_balances WHERE kind IN ('available', 'locked') AND credits_posted < debits_posted;)
CREATE FUNCTION ledger_balances_refuse_negative() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_balances_merchant_not_negative: % of % % would be %', NEW.account, NEW.chain, NEW.currency, NEW.credits_posted - NEW.debits_posted
    USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER ledger_balances_merchant_not_negative AFTER INSERT OR UPDATE ON ledger_balances
  FOR EACH ROW WHEN (NEW.kind IN ('available', 'locked') AND NEW.credits_posted < NEW.debits_posted)
  EXECUTE FUNCTION ledger_balances_refuse_negative();
