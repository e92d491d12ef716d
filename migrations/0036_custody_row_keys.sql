-- Issue 53, defect 5: custody's own rows in `transactions` (a sweep, a gas funding, a withdrawal: event_index -1,
-- the leg's destination, written with the signed bytes before broadcast) had the deposits' unique key. A custody
-- transfer that reached a watched address (a withdrawal to another merchant's deposit address, a real payment to
-- its owner) would have had that native deposit dropped: the indexer's insert met custody's row, and its
-- ON CONFLICT … WHERE status = 'reversed' wrote nothing. The type is now part of the key, so a deposit and
-- custody's row of the same transfer are two rows. tx_hash stays first: the same index serves lookups by hash.
ALTER TABLE transactions DROP CONSTRAINT transactions_tx_hash_event_index_to_address_chain_key;
ALTER TABLE transactions ADD CONSTRAINT transactions_transfer_key UNIQUE (tx_hash, event_index, to_address, chain, type);
