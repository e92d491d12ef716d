-- Issue 53, defect 2: one order's events were claimed by time alone, so a retried payment.detected (CONFIRMING)
-- could land after the payment.confirmed (PAID) behind it. Each event of an order, a withdrawal or a refund now
-- names its stream (`order:<id>`, `withdrawal:<id>`, `refund:<id>`) and its place in it (`sequence`, also in its
-- body); the dispatcher does not claim an event while an earlier one of its stream is still pending. A deposit's
-- `wallet.deposit.confirmed` has no stream (written set-based, it stays out of this index).
ALTER TABLE webhook_events ADD COLUMN stream text, ADD COLUMN sequence integer;
CREATE UNIQUE INDEX webhook_events_stream_idx ON webhook_events (stream, sequence) WHERE stream IS NOT NULL;
