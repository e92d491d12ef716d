-- Issue 46: a node's answer to a broadcast is never evidence that the bytes did or did not go out. An attempt
-- refused by a node (a documented error of a 2xx answer) stays live and waits for landing evidence like any
-- other; the refusal is kept here so that, once final state proves it can never land, the operation fails
-- (what was refused would be refused again) instead of signing the same transfer anew.
ALTER TABLE custody_transactions ADD COLUMN refusal text;
