-- Identifiers begin with their creation time (milliseconds, ten characters of the id alphabet), then
-- 70 random bits, as newIds() in src/ids.ts: ids made later sort later, so the indexes keyed by them
-- (every primary key, ledger references) grow at their end instead of touching a random page of a
-- large table per row. Same prefix, length and alphabet as before; existing ids stay as they are.
CREATE OR REPLACE FUNCTION facet_id(prefix text) RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
DECLARE
  alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
  ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  spelled text := '';
BEGIN
  FOR i IN 1..10 LOOP
    spelled := substr(alphabet, (ms % 32)::int + 1, 1) || spelled;
    ms := ms / 32;
  END LOOP;
  RETURN prefix || '_' || spelled || translate(
    substr(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), 1, 14),
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
    '0123456789abcdefghjkmnpqrstvwxyz0123456789abcdefghjkmnpqrstvwxyz');
END
$$;
