-- PostgreSQL twin of migrations/0117_run_kind_decided.sql (same trigger by name, same
-- message): a completed run's kind, base run and scope are decided with it. docs/postgres.md.

CREATE TRIGGER runs_kind_decided BEFORE UPDATE OF kind, base_run_id, scope_json ON runs
    FOR EACH ROW WHEN (OLD.status = 'completed' AND (
        NEW.kind IS DISTINCT FROM OLD.kind
        OR NEW.base_run_id IS DISTINCT FROM OLD.base_run_id
        OR NEW.scope_json IS DISTINCT FROM OLD.scope_json))
    EXECUTE FUNCTION razorrecon_refuse('a completed run''s kind is decided with it');
