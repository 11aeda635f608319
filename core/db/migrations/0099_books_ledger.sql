-- The Books page's stored ledger (docs/books.md, "The stored ledger"): the receivable's events
-- (core.books.rollforward.ledger_events) derived once when a run completes, not on every
-- render. books_ledger_days: each IST day's movement per line (the roll-forward, the month
-- list and the balance chart; a few thousand rows). books_ledger_unexplained: the
-- `unexplained` events summed per (day, entity), what a month's residual drill-down reads by
-- a range on day. books_ledger (one row): what it was derived from (the run, the raw
-- tables' version) and `changed`, which the triggers below set when a raw row is updated or
-- deleted, so a ledger stale against the data is never shown as current.
CREATE TABLE books_ledger (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    run_id          INTEGER,                  -- the run whose exceptions it explains; NULL: none
    source_version  TEXT    NOT NULL,         -- imports and raw tables at build; '' while building
    changed         INTEGER NOT NULL DEFAULT 0,
    built_at        INTEGER NOT NULL,
    events          INTEGER NOT NULL,         -- events it was derived from
    format          INTEGER NOT NULL
);
CREATE TABLE books_ledger_days (
    day     TEXT    NOT NULL,                 -- ISO date, IST
    line    TEXT    NOT NULL,
    amount  INTEGER NOT NULL,                 -- paise
    PRIMARY KEY (day, line)
);
CREATE TABLE books_ledger_unexplained (
    day          TEXT    NOT NULL,            -- ISO date, IST
    entity_type  TEXT    NOT NULL,
    entity_id    TEXT    NOT NULL,
    amount       INTEGER NOT NULL             -- paise, never 0
);
CREATE INDEX books_ledger_unexplained_day ON books_ledger_unexplained (day);
-- A raw row updated or deleted marks the ledger changed (once: the WHEN clause makes every
-- later row a lookup, not a write). A row inserted moves the table's max(rowid), which the
-- stored source_version holds; every import also records an `imports` row.

CREATE TRIGGER books_ledger_payments_update AFTER UPDATE ON payments
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_payments_delete AFTER DELETE ON payments
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_refunds_update AFTER UPDATE ON refunds
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_refunds_delete AFTER DELETE ON refunds
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_settlements_update AFTER UPDATE ON settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_settlements_delete AFTER DELETE ON settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_recon_rows_update AFTER UPDATE ON recon_rows
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_recon_rows_delete AFTER DELETE ON recon_rows
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_instant_settlements_update AFTER UPDATE ON instant_settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_instant_settlements_delete AFTER DELETE ON instant_settlements
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_instant_payouts_update AFTER UPDATE ON instant_payouts
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_instant_payouts_delete AFTER DELETE ON instant_payouts
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_disputes_update AFTER UPDATE ON disputes
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;

CREATE TRIGGER books_ledger_disputes_delete AFTER DELETE ON disputes
WHEN (SELECT changed FROM books_ledger WHERE id = 1) = 0
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1;
END;
