-- Stored incremental runs (docs/engine.md, "Snapshots of the reconciled state"): a run made by
-- `import-day` may leave a snapshot of what it reconciled (the raw tables as merged, its
-- outcomes) in Arrow IPC files beside the database. snapshot_json records them: the import
-- the raw tables stood at, and each file's name and sha256, so that a stale, torn or
-- altered file is recognised and the next day reads the tables instead. NULL: no snapshot.
ALTER TABLE runs ADD COLUMN snapshot_json TEXT;
