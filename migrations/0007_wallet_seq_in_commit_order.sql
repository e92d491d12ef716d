-- Watch lists follow new receive wallets by `seq`, and must never read past a number whose transaction has
-- not committed yet (it would be skipped for good: every payment to it lost). So a wallet's number is taken
-- under a shared advisory lock held until its transaction ends, and a watch list reads only up to a
-- watermark taken under the same lock in exclusive mode: every number at or below it has committed (or
-- rolled back) by then.
ALTER TABLE wallets ALTER COLUMN seq DROP DEFAULT;

CREATE FUNCTION wallets_take_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('facet.wallets.seq'));
  NEW.seq := nextval('wallets_seq_seq');
  RETURN NEW;
END
$$;
CREATE TRIGGER wallets_seq BEFORE INSERT ON wallets FOR EACH ROW EXECUTE FUNCTION wallets_take_seq();

-- The highest wallet number such that every number up to it is settled (committed or rolled back). Called
-- as a statement of its own, the exclusive lock lasts that statement; it gives up after 5 s of waiting.
CREATE FUNCTION wallets_settled_seq() RETURNS bigint LANGUAGE plpgsql SET lock_timeout = '5s' AS $$
DECLARE settled bigint;
BEGIN
  -- waits for the transactions still holding a number; new ones wait the instant this takes
  PERFORM pg_advisory_xact_lock(hashtext('facet.wallets.seq'));
  SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO settled FROM wallets_seq_seq;
  RETURN settled;
END
$$;
