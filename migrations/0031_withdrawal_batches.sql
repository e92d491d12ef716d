-- Withdrawal batches (docs/guides/withdrawal-batches.md): up to 500 withdrawals asked for together, admitted
-- whole or refused whole, approved (or rejected, cancelled) once, as one decision, then each item sent by
-- custody as an ordinary withdrawal. `status` is the decision; the batch's progress is its items'.

CREATE TABLE withdrawal_batches (
  id                 text PRIMARY KEY,
  merchant_id        text NOT NULL REFERENCES merchants (id),
  status             text NOT NULL CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'CANCELLED')),
  description        text,
  item_count         integer NOT NULL CHECK (item_count BETWEEN 1 AND 500),
  -- the most distinct approvals any of its items would need alone (a tightening since raises it)
  required_approvals integer NOT NULL CHECK (required_approvals >= 1),
  -- when the policy admitted it, on the policy's clock (its items carry the same time)
  admitted_at        timestamptz NOT NULL,
  -- who asked (an API key or a console user, who may then not approve it), and how (api, console_csv)
  created_by         text NOT NULL,
  created_by_user_id text REFERENCES console_users (id),
  source             text NOT NULL CHECK (source IN ('api', 'console_csv')),
  -- the decision that ended its PENDING state: who, when, from where, why
  decided_by         text,
  decided_at         timestamptz,
  decided_from       text,
  decision_reason    text,
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX withdrawal_batches_list_idx ON withdrawal_batches (merchant_id, created_at DESC, id DESC);
CREATE INDEX withdrawal_batches_pending_idx ON withdrawal_batches (created_at) WHERE status = 'PENDING';

-- A batch's approvals, with the rules of withdrawal_approvals: the same person never counts twice, at most
-- one approval that is not a console user's counts.
CREATE TABLE withdrawal_batch_approvals (
  batch_id      text NOT NULL REFERENCES withdrawal_batches (id),
  approver_kind text NOT NULL CHECK (approver_kind IN ('console_user', 'operator', 'policy')),
  user_id       text REFERENCES console_users (id),
  approved_by   text NOT NULL,
  approved_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  from_address  text NOT NULL DEFAULT '',
  user_agent    text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX withdrawal_batch_approvals_user_idx ON withdrawal_batch_approvals (batch_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX withdrawal_batch_approvals_operator_idx ON withdrawal_batch_approvals (batch_id) WHERE approver_kind <> 'console_user';

-- A withdrawal that is an item of a batch: its batch and its place in the request (0-based).
ALTER TABLE withdrawals ADD COLUMN batch_id text REFERENCES withdrawal_batches (id);
ALTER TABLE withdrawals ADD COLUMN batch_index integer CHECK (batch_index >= 0);
ALTER TABLE withdrawals ADD CONSTRAINT withdrawals_batch_check CHECK ((batch_id IS NULL) = (batch_index IS NULL));
CREATE UNIQUE INDEX withdrawals_batch_idx ON withdrawals (batch_id, batch_index) WHERE batch_id IS NOT NULL;
