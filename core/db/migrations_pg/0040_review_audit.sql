-- PostgreSQL twin of migrations/0040_review_audit.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- Review and audit hardening.

-- The chain can never fork: two rows may not follow the same predecessor.
CREATE UNIQUE INDEX audit_log_prev_hash ON audit_log (prev_hash);
-- No extra indexes for the Audit page's filters: a scan of 100k rows is milliseconds,
-- while every index slows the bulk appends of a first sync.

-- An exception's history is append-only too; an exception is closed, never deleted.
CREATE TRIGGER exception_events_no_update BEFORE UPDATE ON exception_events
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('exception_events is append-only');

CREATE TRIGGER exception_events_no_delete BEFORE DELETE ON exception_events
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('exception_events is append-only');

CREATE TRIGGER exceptions_no_delete BEFORE DELETE ON exceptions
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('exceptions are closed, never deleted');

-- A request id, once answered, keeps its answer.
CREATE TRIGGER action_requests_no_update BEFORE UPDATE ON action_requests
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('action_requests is append-only');

CREATE TRIGGER action_requests_no_delete BEFORE DELETE ON action_requests
    FOR EACH ROW EXECUTE FUNCTION razorrecon_refuse('action_requests is append-only');

-- Which runs the exception queue has been synced from (the latest one bounds re-syncs).
CREATE TABLE exception_syncs (
    run_id        BIGINT PRIMARY KEY,
    synced_at     BIGINT NOT NULL,
    actor         TEXT    NOT NULL,
    summary_json  TEXT    NOT NULL
);
