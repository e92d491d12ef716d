-- Underpayment tolerance (issue #35): a merchant may accept an order paid short by a little (a customer
-- sending from an exchange loses the exchange's fee). Set per asset in the console, off by default: a
-- percent of the asset's amount (at most 10) and/or an absolute amount in the asset's units; when both are
-- set, both limits hold (the smaller shortfall wins). NULL: that limit is not set.
ALTER TABLE merchant_assets ADD COLUMN underpayment_tolerance_percent numeric
  CHECK (underpayment_tolerance_percent >= 0 AND underpayment_tolerance_percent <= 10);
ALTER TABLE merchant_assets ADD COLUMN underpayment_tolerance_amount numeric
  CHECK (underpayment_tolerance_amount >= 0);
-- the shortfall each accepted asset of an order allows, in the asset's units, fixed when the order is made
-- (a later change of the setting leaves open orders as they were); 0: none
ALTER TABLE order_assets ADD COLUMN underpayment_tolerance numeric NOT NULL DEFAULT 0
  CHECK (underpayment_tolerance >= 0 AND underpayment_tolerance < amount);
-- what a PAID order accepted within its tolerance still lacks (amount − paid_amount), in the order's
-- currency; NULL when nothing is lacking
ALTER TABLE orders ADD COLUMN underpaid_amount numeric CHECK (underpaid_amount > 0);

-- The ledger export (issue #35 part 5) reads the transfers of a time window. The table is append-only and its
-- rows are written in time order, so a BRIN index on the time is a few pages and nearly free to keep up on the
-- indexer's insert path (a B-tree would add a page write per transfer).
CREATE INDEX ledger_transfers_created_brin ON ledger_transfers USING brin (created_at);
