-- An order's time is up only when expire_at has passed here AND on every chain it can be paid on: each of
-- those chains' indexers has stored a block made after expire_at. While an indexer lags, a payment made
-- in time may still be in blocks not read yet (it must not come after an `order.expired`). A chain no
-- indexer has ever followed holds nothing.
CREATE FUNCTION order_time_is_up(order_id text, expire_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT $2 <= now() AND NOT EXISTS (
    SELECT 1 FROM order_assets oa
    JOIN indexer_cursors c ON c.chain = oa.chain
    LEFT JOIN indexed_blocks b ON b.chain = c.chain AND b.number = c.block_number
    WHERE oa.order_id = $1 AND (b.block_time IS NULL OR b.block_time <= $2))
$$;
