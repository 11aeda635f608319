-- PostgreSQL twin of migrations/0099_books_ledger.sql (same version, same tables; INTEGER is
-- BIGINT). PostgreSQL has no rowid, so one statement-level trigger per raw table marks the
-- ledger changed on INSERT, UPDATE, DELETE or TRUNCATE: one call per statement (a COPY of
-- a million rows is one), never per row. docs/books.md, "The stored ledger".
CREATE TABLE books_ledger (
    id              BIGINT  PRIMARY KEY CHECK (id = 1),
    run_id          BIGINT,
    source_version  TEXT    NOT NULL,
    changed         BIGINT  NOT NULL DEFAULT 0,
    built_at        BIGINT  NOT NULL,
    events          BIGINT  NOT NULL,
    format          BIGINT  NOT NULL
);
CREATE TABLE books_ledger_days (
    day     TEXT    NOT NULL,
    line    TEXT    NOT NULL,
    amount  BIGINT  NOT NULL,
    PRIMARY KEY (day, line)
);
CREATE TABLE books_ledger_unexplained (
    day          TEXT    NOT NULL,
    entity_type  TEXT    NOT NULL,
    entity_id    TEXT    NOT NULL,
    amount       BIGINT  NOT NULL
);
CREATE INDEX books_ledger_unexplained_day ON books_ledger_unexplained (day);

CREATE FUNCTION razorrecon_books_ledger_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
BEGIN
    UPDATE books_ledger SET changed = 1 WHERE id = 1 AND changed = 0;
    RETURN NULL;
END
$$;
CREATE TRIGGER books_ledger_payments AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON payments
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_refunds AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON refunds
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_settlements AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settlements
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_recon_rows AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON recon_rows
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_instant_settlements AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON instant_settlements
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_instant_payouts AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON instant_payouts
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
CREATE TRIGGER books_ledger_disputes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON disputes
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_books_ledger_changed();
