-- The Books ledger reads the transfers file too (core.books.ledger FORMAT 5, docs/books.md
-- section 1: a made Route transfer leaves the receivable at its created_at), so a transfer
-- updated or deleted after the ledger was derived (a sync, a webhook) marks it changed, as
-- the other watched tables do (migration 0100); an insert moves max(rowid), which
-- core.db.books_ledger.source_version now reads for transfers as well.
CREATE TRIGGER books_ledger_transfers_update AFTER UPDATE ON transfers
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

CREATE TRIGGER books_ledger_transfers_delete AFTER DELETE ON transfers
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;
