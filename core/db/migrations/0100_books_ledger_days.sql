-- The Books ledger carried forward by import-day (docs/books.md "The stored ledger", docs/engine.md
-- "The Books ledger after import-day"). Three changes to migration 0099:
-- * books_ledger_days counts the events of each (day, line): a day line whose events all
--   went away is deleted when a day's change is applied, as a full derivation never makes it
--   (core.books.ledger FORMAT 2: a ledger stored before this is stale until derived again).
-- * books_ledger_unexplained is unique by (day, entity_type, entity_id), as a derivation
--   makes it, so a day's change is an upsert; this index also serves the range on day.
-- * `changed` records 1 + the newest import's id when a raw row is first changed. An import
--   writes its `imports` row before its raw rows (core.ingest.load._store), so the changes
--   of import N read N + 1, and a change behind the engine's back before it reads at most N:
--   import-day tells the two apart and carries the ledger forward only over its own import.

ALTER TABLE books_ledger_days ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
DROP INDEX books_ledger_unexplained_day;
CREATE UNIQUE INDEX books_ledger_unexplained_key
    ON books_ledger_unexplained (day, entity_type, entity_id);

DROP TRIGGER books_ledger_payments_update;
CREATE TRIGGER books_ledger_payments_update AFTER UPDATE ON payments
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_payments_delete;
CREATE TRIGGER books_ledger_payments_delete AFTER DELETE ON payments
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_refunds_update;
CREATE TRIGGER books_ledger_refunds_update AFTER UPDATE ON refunds
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_refunds_delete;
CREATE TRIGGER books_ledger_refunds_delete AFTER DELETE ON refunds
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_settlements_update;
CREATE TRIGGER books_ledger_settlements_update AFTER UPDATE ON settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_settlements_delete;
CREATE TRIGGER books_ledger_settlements_delete AFTER DELETE ON settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_recon_rows_update;
CREATE TRIGGER books_ledger_recon_rows_update AFTER UPDATE ON recon_rows
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_recon_rows_delete;
CREATE TRIGGER books_ledger_recon_rows_delete AFTER DELETE ON recon_rows
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_instant_settlements_update;
CREATE TRIGGER books_ledger_instant_settlements_update AFTER UPDATE ON instant_settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_instant_settlements_delete;
CREATE TRIGGER books_ledger_instant_settlements_delete AFTER DELETE ON instant_settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_instant_payouts_update;
CREATE TRIGGER books_ledger_instant_payouts_update AFTER UPDATE ON instant_payouts
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_instant_payouts_delete;
CREATE TRIGGER books_ledger_instant_payouts_delete AFTER DELETE ON instant_payouts
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_disputes_update;
CREATE TRIGGER books_ledger_disputes_update AFTER UPDATE ON disputes
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;

DROP TRIGGER books_ledger_disputes_delete;
CREATE TRIGGER books_ledger_disputes_delete AFTER DELETE ON disputes
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0) WHERE id = 1;
END;
