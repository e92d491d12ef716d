-- Webhook delivery state on the outbox, and a record of every attempt.

ALTER TABLE webhook_events
  ADD COLUMN status           text NOT NULL DEFAULT 'pending'
                              CHECK (status IN ('pending', 'delivered', 'dead', 'no_destination')),
  ADD COLUMN attempts         integer NOT NULL DEFAULT 0,
  -- when the next attempt is due; while an attempt runs, the end of its lease
  ADD COLUMN next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN last_status_code integer,
  ADD COLUMN last_error       text,
  ADD COLUMN delivered_at     timestamptz,
  ADD COLUMN dead_at          timestamptz;

UPDATE webhook_events SET status = 'no_destination' WHERE destination IS NULL;

CREATE INDEX webhook_events_due_idx ON webhook_events (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_events_merchant_status_idx ON webhook_events (merchant_id, status);

CREATE TABLE webhook_attempts (
  id               text PRIMARY KEY,
  event_id         text NOT NULL REFERENCES webhook_events (id),
  attempt          integer NOT NULL,
  destination      text NOT NULL,
  started_at       timestamptz NOT NULL,
  finished_at      timestamptz NOT NULL,
  status_code      integer,
  latency_ms       integer NOT NULL,
  error            text,
  response_excerpt text,
  UNIQUE (event_id, attempt)
);
