-- A completed run's snapshot record (runs.snapshot_json, migration 0096: the files of the
-- snapshot it left and their sha256) is written once (docs/CONTRACTS.md, "What the
-- database refuses"). Migration 0113 left it writable after completion because the code
-- writes it then: import-day names its snapshot files once the run is stored and records
-- them (core.pipeline._leave_snapshot -> core.db.runs.record_snapshot), from NULL to the
-- record, or NULL again when it left none. Nothing writes it later: an older run's record
-- is not cleared when a newer run's snapshot supersedes it (only the latest completed
-- run's is read). The next import-day takes the recorded hashes as the truth about the
-- files it reads instead of the tables, so a record rewritten afterwards (another file's
-- hash) would let files nobody reconciled stand in for the stored state. So: set from NULL
-- once; after that neither changed nor cleared. A running run's stays writable.
--
-- Its name: core.db.audit.GUARD_TRIGGERS (audit verify compares it with this text).

CREATE TRIGGER runs_snapshot_recorded_once BEFORE UPDATE OF snapshot_json ON runs
    WHEN OLD.status = 'completed' AND OLD.snapshot_json IS NOT NULL
      AND NEW.snapshot_json IS NOT OLD.snapshot_json
BEGIN
    SELECT RAISE(ABORT, 'a completed run''s snapshot record is written once');
END;
