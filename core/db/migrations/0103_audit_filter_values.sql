-- Audit page: its Actor and Action filters list the distinct values on every render
-- (core.db.audit.distinct_values). Without an index each was a scan of the whole trail,
-- payloads included: at 479,240 entries (a 10M database) 0.27 and 0.29 CPU s a render.
-- Read from these indexes alone, as entity_type already is from audit_log_entity
-- (docs/benchmark.md, "The 10M build, finished"). Indexes only: the append-only triggers
-- refuse changes to rows, not new indexes, and `audit verify` reads rows, not indexes.
CREATE INDEX IF NOT EXISTS audit_log_actor ON audit_log (actor);
CREATE INDEX IF NOT EXISTS audit_log_action ON audit_log (action);
