-- Razorpay live data: sync runs, per-resource watermarks, sync errors, the webhook inbox
-- and log, and the marks that tell the next reconciliation what webhooks touched.
-- Dates named *_day / range_* are IST calendar dates (YYYY-MM-DD); times are Unix seconds.

-- One `python -m core sync` invocation. A run left 'running' by a dead process is marked
-- 'interrupted' by the next sync (pid and host tell whether its process still lives).
CREATE TABLE razorpay_sync_runs (
    id            INTEGER PRIMARY KEY,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    finished_at   INTEGER,
    status        TEXT    NOT NULL CHECK (status IN
                  ('running', 'completed', 'failed', 'interrupted')),
    range_from    TEXT    NOT NULL,
    range_to      TEXT    NOT NULL,
    base_url      TEXT    NOT NULL,
    pid           INTEGER NOT NULL,
    host          TEXT    NOT NULL,
    resumed       INTEGER NOT NULL DEFAULT 0,  -- 1 when it continued an unfinished range
    requests      INTEGER NOT NULL DEFAULT 0,
    retries       INTEGER NOT NULL DEFAULT 0,
    steps         INTEGER NOT NULL DEFAULT 0,  -- IST days committed (one step = one day)
    items         INTEGER NOT NULL DEFAULT 0,  -- items fetched in committed steps
    inserted      INTEGER NOT NULL DEFAULT 0,  -- rows new to the database
    updated       INTEGER NOT NULL DEFAULT 0,  -- rows whose stored values changed
    error         TEXT
);
CREATE INDEX razorpay_sync_runs_status ON razorpay_sync_runs (status);

-- The resume point per resource: every IST day of [range_from, range_to] up to and including
-- done_through is stored completely. complete = 1 once the whole range was synced.
CREATE TABLE razorpay_sync_watermarks (
    resource      TEXT    PRIMARY KEY CHECK (resource IN
                  ('payments', 'refunds', 'settlements', 'settlement_recon')),
    range_from    TEXT    NOT NULL,
    range_to      TEXT    NOT NULL,
    done_through  TEXT,
    complete      INTEGER NOT NULL DEFAULT 0,
    items         INTEGER NOT NULL DEFAULT 0,  -- items stored for this range so far
    run_id        INTEGER NOT NULL REFERENCES razorpay_sync_runs (id),
    updated_at    INTEGER NOT NULL
);

-- Every retried failure and every failure that ended a run. Written outside the step's
-- transaction, so it survives the rollback of the step it describes.
CREATE TABLE razorpay_sync_errors (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES razorpay_sync_runs (id),
    occurred_at   INTEGER NOT NULL,
    resource      TEXT,
    day           TEXT,
    kind          TEXT    NOT NULL CHECK (kind IN ('retried', 'fatal')),
    status_code   INTEGER,
    message       TEXT    NOT NULL
);
CREATE INDEX razorpay_sync_errors_run ON razorpay_sync_errors (run_id);

-- The durable inbox: one row per accepted webhook event id. A second delivery of the same id
-- finds its row and changes nothing.
CREATE TABLE razorpay_webhook_inbox (
    event_id          TEXT    PRIMARY KEY,
    event             TEXT    NOT NULL,
    event_created_at  INTEGER NOT NULL,
    received_at       INTEGER NOT NULL,
    body_sha256       TEXT    NOT NULL,
    body              TEXT    NOT NULL,          -- the raw body as received (verified UTF-8)
    outcome           TEXT    NOT NULL CHECK (outcome IN ('applied', 'ignored')),
    detail_json       TEXT    NOT NULL           -- what was upserted, skipped and marked
);
CREATE INDEX razorpay_webhook_inbox_received ON razorpay_webhook_inbox (received_at);
-- The event id header is not signed: the same signed body under a new id is a replay.
CREATE UNIQUE INDEX razorpay_webhook_inbox_body ON razorpay_webhook_inbox (body_sha256);

-- Every delivery, accepted or not. Rejected bodies are kept only as hash and size: a forger
-- must not be able to fill the database with text of its choosing.
CREATE TABLE razorpay_webhook_log (
    id            INTEGER PRIMARY KEY,
    received_at   INTEGER NOT NULL,
    event_id      TEXT,
    verdict       TEXT    NOT NULL CHECK (verdict IN
                  ('accepted', 'duplicate', 'bad_signature', 'malformed', 'unconfigured')),
    reason        TEXT    NOT NULL,
    body_sha256   TEXT    NOT NULL,
    body_bytes    INTEGER NOT NULL
);
CREATE INDEX razorpay_webhook_log_verdict ON razorpay_webhook_log (verdict, received_at);

-- The newest webhook event applied to each entity, so a late, older delivery never
-- overwrites what a newer one wrote.
CREATE TABLE razorpay_entity_versions (
    entity_type       TEXT    NOT NULL,
    entity_id         TEXT    NOT NULL,
    event_created_at  INTEGER NOT NULL,
    event_id          TEXT    NOT NULL,
    PRIMARY KEY (entity_type, entity_id)
);

-- Entities a webhook touched since the last reconciliation. The pipeline clears them when a
-- run has taken them into account.
CREATE TABLE rereconcile_marks (
    id                 INTEGER PRIMARY KEY,
    entity_type        TEXT    NOT NULL,   -- payment, refund, settlement (outcome entity types)
    entity_id          TEXT    NOT NULL,
    reason             TEXT    NOT NULL,   -- the event name, e.g. 'settlement.processed'
    event_id           TEXT    NOT NULL,
    marked_at          INTEGER NOT NULL,
    cleared_at         INTEGER,
    cleared_by_run_id  INTEGER,
    UNIQUE (entity_type, entity_id, event_id)
);
CREATE INDEX rereconcile_marks_open ON rereconcile_marks (cleared_at, entity_type, entity_id);
