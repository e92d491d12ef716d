-- Withdrawal policy (custody/README.md "Withdrawal policy"): where money may go (an address book with a
-- cooling-off), how much per period (velocity limits), how many people must agree (quorum over console
-- users with roles), how fast the rules may be loosened (pending changes), and an append-only audit log.

-- One row per setting in force: address_book (on|off), cooling_off (seconds), quorum (N), and per asset
-- per_tx:<ASSET> / per_day:<ASSET> (an amount) and quorum_above:<ASSET> (AMOUNT:N). No row = the default.
CREATE TABLE withdrawal_policy_settings (
  merchant_id text NOT NULL REFERENCES merchants (id),
  setting     text NOT NULL,
  value       text,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (merchant_id, setting)
);

-- Every requested change; a loosening waits here (PENDING) until effective_at, a tightening is APPLIED at
-- once. A newer request for the same setting supersedes a pending one.
CREATE TABLE withdrawal_policy_changes (
  id             text PRIMARY KEY,
  merchant_id    text NOT NULL REFERENCES merchants (id),
  setting        text NOT NULL,
  previous_value text,
  value          text,
  requested_by   text NOT NULL,
  requested_at   timestamptz NOT NULL,
  effective_at   timestamptz NOT NULL,
  status         text NOT NULL CHECK (status IN ('PENDING', 'APPLIED', 'CANCELLED', 'SUPERSEDED')),
  ended_by       text,
  ended_at       timestamptz
);
CREATE UNIQUE INDEX withdrawal_policy_changes_pending_idx ON withdrawal_policy_changes (merchant_id, setting) WHERE status = 'PENDING';
CREATE INDEX withdrawal_policy_changes_merchant_idx ON withdrawal_policy_changes (merchant_id, requested_at DESC);

-- The address book: an entry is usable from usable_from (added + cooling-off); removal is at once.
CREATE TABLE withdrawal_addresses (
  id           text PRIMARY KEY,
  merchant_id  text NOT NULL REFERENCES merchants (id),
  chain        text NOT NULL,
  address      text NOT NULL,
  -- the comparison form: lower case on BEP20 (checksums are case), as written elsewhere
  address_key  text NOT NULL,
  label        text NOT NULL DEFAULT '',
  created_by   text NOT NULL,
  created_at   timestamptz NOT NULL,
  usable_from  timestamptz NOT NULL,
  removed_by   text,
  removed_at   timestamptz
);
CREATE UNIQUE INDEX withdrawal_addresses_live_idx ON withdrawal_addresses (merchant_id, chain, address_key) WHERE removed_at IS NULL;

-- Console users beyond the owner: invited with a one-time link; approval rights start after the
-- cooling-off (a new approver is a loosening too); a removed user's sessions end.
ALTER TABLE console_users ADD COLUMN approver_from timestamptz;
ALTER TABLE console_users ADD COLUMN invited_by text;
ALTER TABLE console_users ADD COLUMN removed_at timestamptz;

CREATE TABLE console_invites (
  id          text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  token_hash  text NOT NULL UNIQUE,
  login_name  text NOT NULL,
  role        text NOT NULL CHECK (role IN ('admin', 'approver', 'viewer')),
  invited_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);

-- Withdrawals: who asked (an API key or a console user, who may then not approve it) and how many
-- distinct approvals it needs (the policy at creation; a tightening raises it for pending ones).
ALTER TABLE withdrawals ADD COLUMN required_approvals integer NOT NULL DEFAULT 1 CHECK (required_approvals >= 1);
ALTER TABLE withdrawals ADD COLUMN created_by text;
ALTER TABLE withdrawals ADD COLUMN created_by_user_id text REFERENCES console_users (id);
-- when the policy admitted it, on the policy's clock: the rolling 24 h window counts by this
ALTER TABLE withdrawals ADD COLUMN admitted_at timestamptz;
UPDATE withdrawals SET admitted_at = created_at;
ALTER TABLE withdrawals ALTER COLUMN admitted_at SET NOT NULL;
CREATE INDEX withdrawals_window_idx ON withdrawals (merchant_id, chain, currency, admitted_at);

CREATE TABLE withdrawal_approvals (
  withdrawal_id text NOT NULL REFERENCES withdrawals (id),
  approver_kind text NOT NULL CHECK (approver_kind IN ('console_user', 'operator', 'policy')),
  user_id       text REFERENCES console_users (id),
  approved_by   text NOT NULL,
  approved_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  from_address  text NOT NULL DEFAULT '',
  user_agent    text NOT NULL DEFAULT ''
);
-- the same person never counts twice; at most one approval that is not a console user's counts
CREATE UNIQUE INDEX withdrawal_approvals_user_idx ON withdrawal_approvals (withdrawal_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX withdrawal_approvals_operator_idx ON withdrawal_approvals (withdrawal_id) WHERE approver_kind <> 'console_user';

-- Decisions taken before this migration become their approval record.
INSERT INTO withdrawal_approvals (withdrawal_id, approver_kind, user_id, approved_by, approved_at, from_address)
SELECT w.id,
       CASE WHEN w.decided_by = 'auto-approval policy' THEN 'policy' WHEN u.id IS NOT NULL THEN 'console_user' ELSE 'operator' END,
       u.id, w.decided_by, w.decided_at, coalesce(w.decided_from, '')
FROM withdrawals w LEFT JOIN console_users u ON u.merchant_id = w.merchant_id AND u.login_name = w.decided_by
WHERE w.status IN ('APPROVED', 'BROADCAST', 'COMPLETED', 'FAILED') AND w.decided_by IS NOT NULL AND w.decided_at IS NOT NULL;

-- The audit log of security acts: append-only, enforced by the database itself.
CREATE TABLE audit_log (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  merchant_id  text REFERENCES merchants (id),
  at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor_kind   text NOT NULL CHECK (actor_kind IN ('console_user', 'api_key', 'operator', 'service')),
  actor        text NOT NULL,
  from_address text NOT NULL DEFAULT '',
  user_agent   text NOT NULL DEFAULT '',
  action       text NOT NULL,
  subject      text NOT NULL DEFAULT '',
  detail       text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_merchant_idx ON audit_log (merchant_id, id DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP;
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
