-- PostgreSQL twin of migrations/0113_completed_runs_immutable.sql (same version, same
-- triggers by name, same messages). docs/postgres.md.
--
-- A trigger's WHEN may not read another table here, so the outcomes' check is a function:
-- one seek on runs' primary key per row, as on SQLite. TRUNCATE, which row triggers do
-- not see, is refused on outcomes and runs (as on the audit trail, 0090); the app role
-- holds no TRUNCATE on them anyway.

CREATE FUNCTION razorrecon_refuse_completed_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM runs WHERE id = OLD.run_id AND status = 'completed')
        OR (TG_OP = 'UPDATE' AND NEW.run_id IS DISTINCT FROM OLD.run_id
            AND EXISTS (SELECT 1 FROM runs WHERE id = NEW.run_id AND status = 'completed')) THEN
        RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER outcomes_completed_no_update BEFORE UPDATE ON outcomes
    FOR EACH ROW EXECUTE FUNCTION
    razorrecon_refuse_completed_outcome('outcomes of a completed run are immutable');

CREATE TRIGGER outcomes_completed_no_delete BEFORE DELETE ON outcomes
    FOR EACH ROW EXECUTE FUNCTION
    razorrecon_refuse_completed_outcome('outcomes of a completed run are immutable');

CREATE TRIGGER outcomes_no_truncate BEFORE TRUNCATE ON outcomes
    FOR EACH STATEMENT EXECUTE FUNCTION
    razorrecon_refuse('outcomes of a completed run are immutable');

CREATE TRIGGER runs_status_decided_once BEFORE UPDATE OF status ON runs
    FOR EACH ROW WHEN (OLD.status <> 'running' AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION razorrecon_refuse('a run''s status is decided once');

CREATE TRIGGER runs_completed_no_update BEFORE UPDATE ON runs
    FOR EACH ROW WHEN (OLD.status = 'completed' AND (
        NEW.id IS DISTINCT FROM OLD.id
        OR NEW.started_at IS DISTINCT FROM OLD.started_at
        OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
        OR NEW.as_of IS DISTINCT FROM OLD.as_of
        OR NEW.source IS DISTINCT FROM OLD.source
        OR NEW.params_json IS DISTINCT FROM OLD.params_json
        OR NEW.input_hashes_json IS DISTINCT FROM OLD.input_hashes_json
        OR NEW.counts_json IS DISTINCT FROM OLD.counts_json
        OR NEW.error IS DISTINCT FROM OLD.error
        OR NEW.through_import_id IS DISTINCT FROM OLD.through_import_id))
    EXECUTE FUNCTION razorrecon_refuse('a completed run is immutable');

CREATE TRIGGER runs_completed_no_delete BEFORE DELETE ON runs
    FOR EACH ROW WHEN (OLD.status = 'completed')
    EXECUTE FUNCTION razorrecon_refuse('a completed run is immutable');

CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION razorrecon_refuse('a completed run is immutable');

CREATE TRIGGER exceptions_identity_fixed
    BEFORE UPDATE OF id, entity_type, entity_id, reason_code, first_run_id, opened_at
    ON exceptions
    FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id
        OR NEW.entity_type IS DISTINCT FROM OLD.entity_type
        OR NEW.entity_id IS DISTINCT FROM OLD.entity_id
        OR NEW.reason_code IS DISTINCT FROM OLD.reason_code
        OR NEW.first_run_id IS DISTINCT FROM OLD.first_run_id
        OR NEW.opened_at IS DISTINCT FROM OLD.opened_at)
    EXECUTE FUNCTION razorrecon_refuse('an exception''s identity is fixed');
