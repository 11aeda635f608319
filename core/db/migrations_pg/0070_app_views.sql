-- PostgreSQL twin of migrations/0070_app_views.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- The app's read models: indexes the review queue needs at a million payments, and a
-- per-run cache of the figures that depend only on a run's (immutable) outcomes.

-- Search by payment / refund / settlement id, order id or UTR (prefix GLOB uses these).
CREATE INDEX IF NOT EXISTS exceptions_entity ON exceptions (entity_id);
CREATE INDEX IF NOT EXISTS exceptions_order ON exceptions (order_id);
CREATE INDEX IF NOT EXISTS exceptions_utr ON exceptions (utr);
-- Age filter and sort; ageing, and exposure by class and code, over open items (covering).
CREATE INDEX IF NOT EXISTS exceptions_status_created
    ON exceptions (status, entity_created_at, exposure_amount);
CREATE INDEX IF NOT EXISTS exceptions_status_class
    ON exceptions (status, exposure_class, reason_code, exposure_amount);
-- A settlement's bank line(s) found through the run's bank_entry outcomes.
CREATE INDEX IF NOT EXISTS outcomes_entity_status ON outcomes (run_id, entity_type, status);

-- Figures computed once per run: captured, settled, credited, pending, match rate by day.
-- data_version names the raw data they were computed from, so a later import recomputes.
CREATE TABLE IF NOT EXISTS app_run_summaries (
    run_id        BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    data_version  TEXT    NOT NULL,
    computed_at   BIGINT NOT NULL,
    summary_json  TEXT    NOT NULL
);

-- The held-out evaluation of a benchmark run against its labels, computed once per run.
-- labels_hash names the labels file scored against.
CREATE TABLE IF NOT EXISTS app_evaluations (
    run_id       BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    labels_hash  TEXT    NOT NULL,
    computed_at  BIGINT NOT NULL,
    report_json  TEXT    NOT NULL
);
