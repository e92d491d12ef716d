-- When a signed transaction was first handed to a node. A node's refusal of bytes that may already have
-- been accepted (by another node, or by this one before a lost answer or a crash) proves nothing: the
-- accepted copy can still land, and failing the operation then would give a withdrawal's money back while
-- it leaves. Only a refusal of the first send, by the first node asked, marks an attempt rejected; any
-- later refusal waits until the transaction lands or is proven never to (custody/transfer-sender.ts).
ALTER TABLE custody_transactions ADD COLUMN first_sent_at timestamptz;

-- Attempts stored before this column: whether a node has seen them is unknown, so they count as sent.
UPDATE custody_transactions SET first_sent_at = updated_at;
