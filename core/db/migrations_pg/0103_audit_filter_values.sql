-- PostgreSQL twin of migrations/0103_audit_filter_values.sql: the Audit page's distinct
-- actors and actions read from an index (an index-only scan once the visibility map is set).
CREATE INDEX IF NOT EXISTS audit_log_actor ON audit_log (actor);
CREATE INDEX IF NOT EXISTS audit_log_action ON audit_log (action);
