-- PostgreSQL twin of migrations/0116_month_closes_kept.sql (same triggers by name, same
-- message): a closed month's rows in month_closes and month_close_books are never updated
-- or deleted. TRUNCATE, which row triggers do not see, is refused too, and the app role
-- loses the rights a close never uses (as for the audit trail, 0090). docs/postgres.md.

CREATE TRIGGER month_closes_no_update BEFORE UPDATE ON month_closes
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

CREATE TRIGGER month_closes_no_delete BEFORE DELETE ON month_closes
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

CREATE TRIGGER month_closes_no_truncate BEFORE TRUNCATE ON month_closes
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

CREATE TRIGGER month_close_books_no_update BEFORE UPDATE ON month_close_books
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

CREATE TRIGGER month_close_books_no_delete BEFORE DELETE ON month_close_books
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

CREATE TRIGGER month_close_books_no_truncate BEFORE TRUNCATE ON month_close_books
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('a closed month is kept as closed');

REVOKE UPDATE, DELETE, TRUNCATE ON month_closes, month_close_books FROM razorrecon_app;
