-- A merchant's transactions, and a deposit address's, are listed newest first, and were indexed that way
-- (created_at DESC). But every new row sorts first in its merchant's range, so each full page split in
-- two with the new row on the left, and the right half stayed half empty for good: the merchant index of
-- a bench database was at 39% leaf density (twice its size, twice the pages to cache and to log). Indexed
-- ascending, new rows go on at the end of the range and pages fill (82% measured); PostgreSQL reads the
-- index backwards for the same newest-first order and the same keyset.
--
-- Rebuilding takes the table's write lock for the time it takes (seconds per million rows); a deployment
-- with a large table can build the new indexes CONCURRENTLY beforehand under other names and swap them.
DROP INDEX transactions_merchant_idx;
CREATE INDEX transactions_merchant_idx ON transactions (merchant_id, created_at, id);
DROP INDEX transactions_deposit_address_idx;
CREATE INDEX transactions_deposit_address_idx ON transactions (deposit_address_id, created_at) WHERE deposit_address_id IS NOT NULL;
