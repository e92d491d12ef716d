-- The tables that grow with the business (transactions with every deposit, deposit addresses by the
-- million at an exchange, orders) are listed newest first, and were indexed that way (created_at DESC).
-- But every new row sorts first in its merchant's range, so each full page split in two with the new row
-- on the left, and the right half stayed half empty for good: the transactions' merchant index of a bench
-- database was at 39% leaf density (twice its size, twice the pages to cache and to log). Indexed
-- ascending, new rows go on at the end of the range and pages fill (82% measured); PostgreSQL reads the
-- index backwards for the same newest-first order and the same keyset.
--
-- Rebuilding takes each table's write lock for the time it takes (seconds per million rows); a deployment
-- with large tables can build the new indexes CONCURRENTLY beforehand under other names and swap them.
DROP INDEX transactions_merchant_idx;
CREATE INDEX transactions_merchant_idx ON transactions (merchant_id, created_at, id);
DROP INDEX transactions_deposit_address_idx;
CREATE INDEX transactions_deposit_address_idx ON transactions (deposit_address_id, created_at) WHERE deposit_address_id IS NOT NULL;
DROP INDEX deposit_addresses_list_idx;
CREATE INDEX deposit_addresses_list_idx ON deposit_addresses (merchant_id, created_at, id);
DROP INDEX orders_merchant_list_idx;
CREATE INDEX orders_merchant_list_idx ON orders (merchant_id, created_at, id);
