-- PostgreSQL twin of migrations/0114_run_snapshot_recorded_once.sql (same trigger by name,
-- same message): a completed run's snapshot_json is set from NULL once, then neither
-- changed nor cleared. docs/postgres.md.

CREATE TRIGGER runs_snapshot_recorded_once BEFORE UPDATE OF snapshot_json ON runs
    FOR EACH ROW WHEN (OLD.status = 'completed' AND OLD.snapshot_json IS NOT NULL
        AND NEW.snapshot_json IS DISTINCT FROM OLD.snapshot_json)
    EXECUTE FUNCTION razorrecon_refuse('a completed run''s snapshot record is written once');
