-- A closed month is kept as closed (docs/books.md section 4, docs/CONTRACTS.md "What the
-- database refuses"): a close only ever inserts its row in month_closes (0081, 0115) and
-- its kept balance by day and journal in month_close_books (0115); nothing reopens or
-- rewrites one. The next open month's prior-period adjustment vouchers and its roll-forward
-- adjustment are computed against what these rows kept, so a row rewritten or deleted
-- afterwards would change a closed month's figures, or drop the adjustments, without a
-- trace. So both tables refuse UPDATE and DELETE.
--
-- Their names: core.db.audit.GUARD_TRIGGERS (audit verify compares them with this text).

CREATE TRIGGER month_closes_no_update BEFORE UPDATE ON month_closes
BEGIN
    SELECT RAISE(ABORT, 'a closed month is kept as closed');
END;

CREATE TRIGGER month_closes_no_delete BEFORE DELETE ON month_closes
BEGIN
    SELECT RAISE(ABORT, 'a closed month is kept as closed');
END;

CREATE TRIGGER month_close_books_no_update BEFORE UPDATE ON month_close_books
BEGIN
    SELECT RAISE(ABORT, 'a closed month is kept as closed');
END;

CREATE TRIGGER month_close_books_no_delete BEFORE DELETE ON month_close_books
BEGIN
    SELECT RAISE(ABORT, 'a closed month is kept as closed');
END;
