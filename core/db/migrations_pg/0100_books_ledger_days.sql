-- PostgreSQL twin of migrations/0100_books_ledger_days.sql: the event count per day line,
-- the unique (day, entity_type, entity_id), and the statement triggers' function recording
-- 1 + the newest import's id (an import's rows are written after its `imports` row, in its
-- transaction) instead of 1. docs/books.md, "The stored ledger".
ALTER TABLE books_ledger_days ADD COLUMN events BIGINT NOT NULL DEFAULT 0;
DROP INDEX books_ledger_unexplained_day;
CREATE UNIQUE INDEX books_ledger_unexplained_key
    ON books_ledger_unexplained (day, entity_type, entity_id);
CREATE OR REPLACE FUNCTION razorrecon_books_ledger_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
BEGIN
    UPDATE books_ledger SET changed = 1 + coalesce((SELECT max(id) FROM imports), 0)
    WHERE id = 1 AND changed = 0;
    RETURN NULL;
END
$$;
