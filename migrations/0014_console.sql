-- The merchant console: its human users (bound once through the onboarding's one-time token), their
-- sessions, and failed logins (for rate limiting per account and per address).

CREATE TABLE console_users (
  id            text PRIMARY KEY,
  merchant_id   text NOT NULL REFERENCES merchants (id),
  login_name    text NOT NULL UNIQUE,
  -- scrypt$N$r$p$salt$hash (base64url); the password itself is never stored
  password_hash text NOT NULL,
  role          text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'admin', 'approver', 'viewer')),
  totp_secret   text,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX console_users_merchant_idx ON console_users (merchant_id);

-- A session is known by the sha256 of its cookie; the CSRF token every form carries is its own.
CREATE TABLE console_sessions (
  id_hash      text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES console_users (id),
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at   timestamptz NOT NULL,
  ended_at     timestamptz
);
CREATE INDEX console_sessions_user_idx ON console_sessions (user_id);

CREATE TABLE console_login_failures (
  login_name text NOT NULL,
  address    text NOT NULL,
  at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX console_login_failures_name_idx ON console_login_failures (login_name, at);
CREATE INDEX console_login_failures_address_idx ON console_login_failures (address, at);
