-- Solana: a receive wallet's token account closed after its sweep, its rent returned to the platform's gas
-- wallet (custody/collections.ts). An operation of its own kind, driven like any other by the receive
-- wallet's actor; its amount (the rent) is read from the chain when it is signed, so it starts at 0.
ALTER TABLE custody_operations DROP CONSTRAINT custody_operations_type_check;
ALTER TABLE custody_operations ADD CONSTRAINT custody_operations_type_check
  CHECK (type IN ('collection', 'gas_funding', 'withdrawal', 'account_close'));
ALTER TABLE custody_operations DROP CONSTRAINT custody_operations_amount_check;
ALTER TABLE custody_operations ADD CONSTRAINT custody_operations_amount_check
  CHECK (amount = trunc(amount) AND (amount > 0 OR (type = 'account_close' AND amount = 0)));
-- one close of a wallet's token account in flight at a time
CREATE UNIQUE INDEX custody_operations_one_close_idx ON custody_operations (wallet_id, currency)
  WHERE type = 'account_close' AND status NOT IN ('COMPLETED', 'FAILED');
-- what a custody transaction does when it is not a plain transfer of `currency` from `from_address` to `to_address`
-- (CloseTokenAccount; TRON's stake actions): reconciliation counts no balance moved by it, only its fee
ALTER TABLE custody_transactions ADD COLUMN action text;
