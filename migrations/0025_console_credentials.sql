-- Console credentials that mean what they say (custody/README.md "Who approves").

-- The console user who minted an API key: a withdrawal created with the key has that user as its
-- requester, who then cannot approve it, as for one created in the console. Keys made before this, by the
-- operator CLI or at onboarding, have none.
ALTER TABLE api_keys ADD COLUMN created_by_user_id text REFERENCES console_users (id);

-- The last TOTP time step a user's code was accepted for: a code is accepted once, never replayed
-- within its window.
ALTER TABLE console_users ADD COLUMN totp_last_step bigint;

-- Failed password re-confirmations (before an approval, an address-book or policy change, a key, TOTP
-- enrollment) count with failed logins; what each was, and the lookups the throttle makes per account and
-- source address together.
ALTER TABLE console_login_failures ADD COLUMN kind text NOT NULL DEFAULT 'login' CHECK (kind IN ('login', 'reconfirm'));
CREATE INDEX console_login_failures_name_address_idx ON console_login_failures (login_name, address, at);

-- Where each console user has logged in from (the throttle waives an account's backoff there: a stranger's
-- failures elsewhere never keep its owner out).
CREATE INDEX audit_log_logins_idx ON audit_log (actor, from_address) WHERE action = 'console.login';
