-- Review and audit hardening.

-- The chain can never fork: two rows may not follow the same predecessor.
CREATE UNIQUE INDEX audit_log_prev_hash ON audit_log (prev_hash);
-- No extra indexes for the Audit page's filters: a scan of 100k rows is milliseconds,
-- while every index slows the bulk appends of a first sync.

-- An exception's history is append-only too; an exception is closed, never deleted.
CREATE TRIGGER exception_events_no_update BEFORE UPDATE ON exception_events
BEGIN
    SELECT RAISE(ABORT, 'exception_events is append-only');
END;

CREATE TRIGGER exception_events_no_delete BEFORE DELETE ON exception_events
BEGIN
    SELECT RAISE(ABORT, 'exception_events is append-only');
END;

CREATE TRIGGER exceptions_no_delete BEFORE DELETE ON exceptions
BEGIN
    SELECT RAISE(ABORT, 'exceptions are closed, never deleted');
END;

-- A request id, once answered, keeps its answer.
CREATE TRIGGER action_requests_no_update BEFORE UPDATE ON action_requests
BEGIN
    SELECT RAISE(ABORT, 'action_requests is append-only');
END;

CREATE TRIGGER action_requests_no_delete BEFORE DELETE ON action_requests
BEGIN
    SELECT RAISE(ABORT, 'action_requests is append-only');
END;

-- Which runs the exception queue has been synced from (the latest one bounds re-syncs).
CREATE TABLE exception_syncs (
    run_id        INTEGER PRIMARY KEY,
    synced_at     INTEGER NOT NULL,
    actor         TEXT    NOT NULL,
    summary_json  TEXT    NOT NULL
);
