-- The Books ledger reads the transfers file too (core.books.ledger FORMAT 5, docs/books.md
-- section 1): any statement that changes transfers marks it changed, as for the other
-- watched tables (migrations 0099, 0100).
CREATE TRIGGER books_ledger_transfers AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON transfers
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
