-- Incremental runs (docs/engine.md, "Incremental runs"): a run is 'full' (every entity
-- reconciled) or 'incremental' (only what a day's load can change; the rest carried
-- forward from base_run_id). scope_json: what the incremental run re-reconciled (counts),
-- or why a day's load was reconciled in full.
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'full'
    CHECK (kind = 'full' OR kind = 'incremental');
ALTER TABLE runs ADD COLUMN base_run_id BIGINT REFERENCES runs (id);
ALTER TABLE runs ADD COLUMN scope_json TEXT;
