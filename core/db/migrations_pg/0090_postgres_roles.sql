-- PostgreSQL backend (docs/postgres.md): the audit trail's guarantees enforced by the
-- database, for every role and on top of the triggers of 0001/0040/0085.
--
-- 1. TRUNCATE is refused like UPDATE and DELETE (row triggers do not see a TRUNCATE).
-- 2. The app role `razorrecon_app` (DATABASE_URL's role is it or a member of it) may read
--    and write the product's tables, but may not UPDATE, DELETE or TRUNCATE the audit
--    trail or the other append-only tables, nor change the schema (it owns nothing, and
--    PostgreSQL 15 gives PUBLIC no CREATE on schema public). The owner role that runs this
--    (DATABASE_OWNER_URL) keeps those rights and owns the triggers.

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('audit_log is append-only');
CREATE TRIGGER exception_events_no_truncate BEFORE TRUNCATE ON exception_events
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('exception_events is append-only');
CREATE TRIGGER action_requests_no_truncate BEFORE TRUNCATE ON action_requests
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('action_requests is append-only');
CREATE TRIGGER review_comments_no_truncate BEFORE TRUNCATE ON review_comments
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('review_comments is append-only');
CREATE TRIGGER review_attachments_no_truncate BEFORE TRUNCATE ON review_attachments
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('review_attachments is append-only');

-- 3. Raw tables keep the order rows were first stored in (SQLite's rowid; an upsert keeps
--    it), for reading a dataset back in its import order (core.db.pg_bulk).
ALTER TABLE payments ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE refunds ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE settlements ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE recon_rows ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE bank_lines ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE instant_settlements ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE instant_payouts ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE disputes ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE transfers ADD COLUMN row_order BIGINT GENERATED ALWAYS AS IDENTITY;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'razorrecon_app') THEN
        CREATE ROLE razorrecon_app NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO razorrecon_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO razorrecon_app;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO razorrecon_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO razorrecon_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO razorrecon_app;

-- A replacing import empties the raw tables in one statement.
GRANT TRUNCATE ON payments, refunds, settlements, recon_rows, bank_lines, instant_settlements,
    instant_payouts, disputes, transfers TO razorrecon_app;

REVOKE UPDATE, DELETE, TRUNCATE ON audit_log, exception_events, action_requests,
    review_comments, review_attachments FROM razorrecon_app;
REVOKE ALL ON schema_migrations FROM razorrecon_app;
GRANT SELECT ON schema_migrations TO razorrecon_app;
