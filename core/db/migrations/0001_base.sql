-- Base schema: raw Razorpay entities and bank lines, runs, outcomes, the exception
-- lifecycle and the audit trail. Money columns are INTEGER paise; times are Unix seconds.

-- Every import (files, benchmark, API sync) is recorded; content_hash makes re-imports no-ops.
CREATE TABLE imports (
    id            INTEGER PRIMARY KEY,
    source        TEXT    NOT NULL,          -- 'files', 'benchmark', 'razorpay_api'
    location      TEXT    NOT NULL,          -- folder, seed or date range
    content_hash  TEXT    NOT NULL,          -- sha256 over the input files' bytes
    imported_at   INTEGER NOT NULL,
    report_json   TEXT    NOT NULL
);
CREATE INDEX imports_hash ON imports (content_hash);

CREATE TABLE payments (
    id              TEXT PRIMARY KEY,
    amount          INTEGER NOT NULL CHECK (amount >= 0),
    currency        TEXT    NOT NULL DEFAULT 'INR',
    status          TEXT    NOT NULL,
    captured        INTEGER NOT NULL DEFAULT 0,
    order_id        TEXT,
    method          TEXT,
    fee             INTEGER,
    tax             INTEGER,
    amount_refunded INTEGER NOT NULL DEFAULT 0,
    international   INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    email           TEXT,
    contact         TEXT,
    description     TEXT,
    notes           TEXT,                    -- JSON text as received
    extra_json      TEXT,                    -- fields we do not model, kept for export
    import_id       INTEGER REFERENCES imports (id)
);
CREATE INDEX payments_order ON payments (order_id);
CREATE INDEX payments_created ON payments (created_at);

CREATE TABLE refunds (
    id          TEXT PRIMARY KEY,
    payment_id  TEXT    NOT NULL,
    amount      INTEGER NOT NULL CHECK (amount >= 0),
    currency    TEXT    NOT NULL DEFAULT 'INR',
    status      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    notes       TEXT,
    extra_json  TEXT,
    import_id   INTEGER REFERENCES imports (id)
);
CREATE INDEX refunds_payment ON refunds (payment_id);

CREATE TABLE settlements (
    id          TEXT PRIMARY KEY,
    amount      INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    fees        INTEGER,
    tax         INTEGER,
    utr         TEXT,
    created_at  INTEGER NOT NULL,
    extra_json  TEXT,
    import_id   INTEGER REFERENCES imports (id)
);
CREATE INDEX settlements_utr ON settlements (utr);

-- Items of GET /v1/settlements/recon/combined. entity_id is not unique: a duplicated
-- row is itself a finding. row_key = type:entity_id:settlement_id:occurrence.
CREATE TABLE recon_rows (
    row_key         TEXT PRIMARY KEY,
    entity_id       TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    debit           INTEGER NOT NULL DEFAULT 0,
    credit          INTEGER NOT NULL DEFAULT 0,
    amount          INTEGER NOT NULL,
    currency        TEXT    NOT NULL DEFAULT 'INR',
    fee             INTEGER NOT NULL DEFAULT 0,
    tax             INTEGER NOT NULL DEFAULT 0,
    on_hold         INTEGER NOT NULL DEFAULT 0,
    settled         INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER,
    settled_at      INTEGER,
    settlement_id   TEXT,
    settlement_utr  TEXT,
    payment_id      TEXT,
    order_id        TEXT,
    method          TEXT,
    dispute_id      TEXT,
    description     TEXT,
    notes           TEXT,
    extra_json      TEXT,
    import_id       INTEGER REFERENCES imports (id)
);
CREATE INDEX recon_rows_entity ON recon_rows (entity_id);
CREATE INDEX recon_rows_settlement ON recon_rows (settlement_id);

-- Bank statement lines; id = '<file name>:<physical line number>'.
CREATE TABLE bank_lines (
    id          TEXT PRIMARY KEY,
    file        TEXT    NOT NULL,
    line_no     INTEGER NOT NULL,
    txn_date    TEXT    NOT NULL,            -- ISO date (IST)
    value_date  TEXT,
    narration   TEXT,
    reference   TEXT,
    utr         TEXT,                        -- normalised UTR found in reference/narration
    debit       INTEGER NOT NULL DEFAULT 0,
    credit      INTEGER NOT NULL DEFAULT 0,
    balance     INTEGER,
    import_id   INTEGER REFERENCES imports (id)
);
CREATE INDEX bank_lines_utr ON bank_lines (utr);
CREATE INDEX bank_lines_date ON bank_lines (txn_date);

-- One reconciliation run. status 'running' with no finished_at after a crash is
-- recognised and discarded, never shown as a result.
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY,
    started_at         INTEGER NOT NULL,
    finished_at        INTEGER,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    as_of              INTEGER NOT NULL,
    source             TEXT    NOT NULL,     -- 'benchmark', 'files', 'razorpay_api'
    params_json        TEXT    NOT NULL,
    input_hashes_json  TEXT    NOT NULL,
    timings_json       TEXT,
    counts_json        TEXT,
    error              TEXT
);

-- One row per entity per run (spec section 7), plus context columns for the queue.
CREATE TABLE outcomes (
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    entity_type       TEXT    NOT NULL,
    entity_id         TEXT    NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('MATCHED', 'PENDING', 'EXCEPTION')),
    reason_code       TEXT    NOT NULL DEFAULT '',
    reason_codes      TEXT    NOT NULL DEFAULT '',
    settlement_id     TEXT,
    expected_amount   INTEGER,
    actual_amount     INTEGER,
    difference        INTEGER,
    exposure_class    TEXT    NOT NULL DEFAULT '',
    exposure_amount   INTEGER NOT NULL DEFAULT 0,
    match_method      TEXT    NOT NULL DEFAULT '',
    order_id          TEXT,                  -- context for search; not part of results.csv
    utr               TEXT,
    entity_created_at INTEGER,
    PRIMARY KEY (run_id, entity_type, entity_id)
);
CREATE INDEX outcomes_status ON outcomes (run_id, status, reason_code);
CREATE INDEX outcomes_settlement ON outcomes (run_id, settlement_id);

-- The exception lifecycle, kept across runs. Identity: (entity_type, entity_id, reason_code).
CREATE TABLE exceptions (
    id                INTEGER PRIMARY KEY,
    entity_type       TEXT    NOT NULL,
    entity_id         TEXT    NOT NULL,
    reason_code       TEXT    NOT NULL,
    reason_codes      TEXT    NOT NULL,
    exposure_class    TEXT    NOT NULL,
    exposure_amount   INTEGER NOT NULL,
    expected_amount   INTEGER,
    actual_amount     INTEGER,
    difference        INTEGER,
    settlement_id     TEXT,
    order_id          TEXT,
    utr               TEXT,
    entity_created_at INTEGER,
    status            TEXT    NOT NULL DEFAULT 'OPEN' CHECK (status IN
                      ('OPEN', 'ASSIGNED', 'INVESTIGATED', 'RESOLVED', 'ESCALATED', 'AUTO_CLEARED')),
    assignee          TEXT,
    due_date          TEXT,                  -- ISO date, derived from exposure
    version           INTEGER NOT NULL DEFAULT 1,
    first_run_id      INTEGER NOT NULL,
    last_run_id       INTEGER NOT NULL,
    opened_at         INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    closed_at         INTEGER,
    UNIQUE (entity_type, entity_id, reason_code)
);
CREATE INDEX exceptions_queue ON exceptions (status, exposure_amount DESC);
CREATE INDEX exceptions_code ON exceptions (reason_code, status);
CREATE INDEX exceptions_settlement ON exceptions (settlement_id);
CREATE INDEX exceptions_assignee ON exceptions (assignee);

-- Every action on an exception (assign, comment, investigate, resolve, ...).
CREATE TABLE exception_events (
    id            INTEGER PRIMARY KEY,
    exception_id  INTEGER NOT NULL REFERENCES exceptions (id),
    action        TEXT    NOT NULL,
    actor         TEXT    NOT NULL,
    note          TEXT,
    from_status   TEXT,
    to_status     TEXT,
    request_id    TEXT,
    created_at    INTEGER NOT NULL
);
CREATE INDEX exception_events_exception ON exception_events (exception_id);

-- Idempotency: one row per request id, with a hash of its payload and its first result.
CREATE TABLE action_requests (
    request_id    TEXT PRIMARY KEY,
    payload_hash  TEXT    NOT NULL,
    result_json   TEXT    NOT NULL,
    created_at    INTEGER NOT NULL
);

-- The audit trail: append-only, hash-chained. hash = sha256(prev_hash + canonical row).
CREATE TABLE audit_log (
    seq           INTEGER PRIMARY KEY,
    created_at    INTEGER NOT NULL,
    actor         TEXT    NOT NULL,
    action        TEXT    NOT NULL,
    entity_type   TEXT    NOT NULL,
    entity_id     TEXT    NOT NULL,
    payload_json  TEXT    NOT NULL,
    prev_hash     TEXT    NOT NULL,
    hash          TEXT    NOT NULL UNIQUE
);
CREATE INDEX audit_log_entity ON audit_log (entity_type, entity_id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
