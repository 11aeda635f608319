-- What a completed run was (migration 0095: kind 'full' or 'incremental', its base run, its
-- scope: what it re-reconciled, or why a day was reconciled in full) is decided with it
-- (docs/CONTRACTS.md, "What the database refuses"). Migration 0113 left these three
-- writable because import-day recorded them after the run completed; they are now written
-- in the transaction that completes the run, while it is still running
-- (core.db.runs.complete_run, `kind`), so once completed nothing changes them. Nothing
-- reads them to decide (the next day's base is the latest completed run, whatever its
-- kind): they are the record of how each run was made, kept as the run's other fields.
--
-- Its name: core.db.audit.GUARD_TRIGGERS (audit verify compares it with this text).

CREATE TRIGGER runs_kind_decided BEFORE UPDATE OF kind, base_run_id, scope_json ON runs
    WHEN OLD.status = 'completed' AND (
        NEW.kind IS NOT OLD.kind
        OR NEW.base_run_id IS NOT OLD.base_run_id
        OR NEW.scope_json IS NOT OLD.scope_json)
BEGIN
    SELECT RAISE(ABORT, 'a completed run''s kind is decided with it');
END;
