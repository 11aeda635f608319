-- What a completed run decided, the database itself refuses to change (docs/CONTRACTS.md,
-- "What the database refuses"). An independent test (D8) found that a statement run on the
-- file by hand (sqlite3 X.sqlite "UPDATE outcomes SET status = 'MATCHED' ...") was accepted,
-- `audit verify` still passed, and the next import-day copied the edited rows forward
-- (its carry copies the base run's stored rows; only their number is checked) while its
-- counts_json held the engine's figures. As the audit trail's (0001), these triggers refuse:
--
-- - outcomes: any UPDATE of a row of a completed run, or one that moves a row into a
--   completed run; any DELETE of a row of a completed run. A running run's rows stay
--   writable: the carry copy (core.db.runs.copy_base_outcomes) deletes the keys decided
--   again from them, and a failed or discarded run's rows are deleted. INSERT is not
--   guarded (a run's ~1M rows would each pay for it).
--   Each row's check is one seek on runs' primary key.
-- - runs: the fields a completed run decided (status, as_of, source, params, inputs,
--   counts, its times and error, the last import it read) and deleting it. Left writable,
--   as the code sets them after completion: timings_json (the store's own time is added,
--   core.db.runs.update_timings), snapshot_json (core.db.runs.record_snapshot), kind,
--   base_run_id and scope_json (core.db.runs.record_run_kind). A failed run's status is
--   final too; only a running run changes status.
-- - exceptions: the columns that identify an exception (id, entity type and id, reason
--   code) and its origin (first_run_id, opened_at). The sync updates its facts, status,
--   assignee, due date, version, last_run_id and times, never these (core.db.review).
--
-- Their names: core.db.audit.GUARD_TRIGGERS.

CREATE TRIGGER outcomes_completed_no_update BEFORE UPDATE ON outcomes
    WHEN (SELECT status FROM runs WHERE id = OLD.run_id) = 'completed'
      OR (NEW.run_id IS NOT OLD.run_id
          AND (SELECT status FROM runs WHERE id = NEW.run_id) = 'completed')
BEGIN
    SELECT RAISE(ABORT, 'outcomes of a completed run are immutable');
END;

CREATE TRIGGER outcomes_completed_no_delete BEFORE DELETE ON outcomes
    WHEN (SELECT status FROM runs WHERE id = OLD.run_id) = 'completed'
BEGIN
    SELECT RAISE(ABORT, 'outcomes of a completed run are immutable');
END;

CREATE TRIGGER runs_status_decided_once BEFORE UPDATE OF status ON runs
    WHEN OLD.status <> 'running' AND NEW.status IS NOT OLD.status
BEGIN
    SELECT RAISE(ABORT, 'a run''s status is decided once');
END;

CREATE TRIGGER runs_completed_no_update BEFORE UPDATE ON runs
    WHEN OLD.status = 'completed' AND (
        NEW.id IS NOT OLD.id
        OR NEW.started_at IS NOT OLD.started_at
        OR NEW.finished_at IS NOT OLD.finished_at
        OR NEW.as_of IS NOT OLD.as_of
        OR NEW.source IS NOT OLD.source
        OR NEW.params_json IS NOT OLD.params_json
        OR NEW.input_hashes_json IS NOT OLD.input_hashes_json
        OR NEW.counts_json IS NOT OLD.counts_json
        OR NEW.error IS NOT OLD.error
        OR NEW.through_import_id IS NOT OLD.through_import_id)
BEGIN
    SELECT RAISE(ABORT, 'a completed run is immutable');
END;

CREATE TRIGGER runs_completed_no_delete BEFORE DELETE ON runs
    WHEN OLD.status = 'completed'
BEGIN
    SELECT RAISE(ABORT, 'a completed run is immutable');
END;

CREATE TRIGGER exceptions_identity_fixed
    BEFORE UPDATE OF id, entity_type, entity_id, reason_code, first_run_id, opened_at
    ON exceptions
    WHEN NEW.id IS NOT OLD.id
      OR NEW.entity_type IS NOT OLD.entity_type
      OR NEW.entity_id IS NOT OLD.entity_id
      OR NEW.reason_code IS NOT OLD.reason_code
      OR NEW.first_run_id IS NOT OLD.first_run_id
      OR NEW.opened_at IS NOT OLD.opened_at
BEGIN
    SELECT RAISE(ABORT, 'an exception''s identity is fixed');
END;
