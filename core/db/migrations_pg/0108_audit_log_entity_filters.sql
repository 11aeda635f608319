-- PostgreSQL twin of migrations/0108_audit_log_entity_filters.sql: the Audit page's entity
-- type and entity id filters each read through an index of their own, in place of the
-- (entity_type, entity_id) index of 0001 (one index more on every append). The planner
-- has statistics here: for a common type it walks the primary key backwards and stops
-- after the page's rows; for a rare one or an id it reads the few matching entries.
DROP INDEX IF EXISTS audit_log_entity;
CREATE INDEX IF NOT EXISTS audit_log_entity_type ON audit_log (entity_type);
CREATE INDEX IF NOT EXISTS audit_log_entity_id ON audit_log (entity_id);
