-- When each transfer's block was made (chain time): an order's lateness is decided by it, not by when the
-- indexer happened to write the row. Rows written before this migration have none (their detection time
-- stands in).
ALTER TABLE transactions ADD COLUMN block_time timestamptz;
