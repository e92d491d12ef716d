-- EVM transfers stuck in mempools are replaced at the same nonce with a higher gas price
-- (custody/transfer-sender.ts): the first attempt becomes `replaced` — not live, but it can still land
-- until the nonce is used, and if it is the one that lands it is the one booked — and a first-send refusal
-- gives its nonce back, so later transfers from the address are not signed above a gap no node mines.
ALTER TABLE custody_transactions DROP CONSTRAINT custody_transactions_status_check;
ALTER TABLE custody_transactions ADD CONSTRAINT custody_transactions_status_check
  CHECK (status IN ('signed', 'broadcast', 'included', 'final', 'reverted', 'dropped', 'rejected', 'replaced'));
-- the unit price it was signed at (wei per gas, sun per energy unit, lamports per signature); a
-- replacement must pay more than the attempt it replaces
ALTER TABLE custody_transactions ADD COLUMN gas_price numeric;
