-- Ingest: the raw tables' keys become NOT NULL columns with a UNIQUE index of their own
-- instead of TEXT PRIMARY KEY. Same rule (one row per key; upserts use ON CONFLICT on the
-- key), but an index that is not part of the table can be dropped for a bulk load into an
-- empty table and built again by one sort afterwards, which is much cheaper than inserting
-- a million random text keys into a B-tree one by one (core.db.raw.write_frame).
-- Columns, order, defaults, checks and secondary indexes are 0001's.

CREATE TABLE payments_0010 (
    id              TEXT    NOT NULL,
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
INSERT INTO payments_0010 (rowid, id, amount, currency, status, captured, order_id, method,
    fee, tax, amount_refunded, international, created_at, email, contact, description, notes,
    extra_json, import_id)
SELECT rowid, id, amount, currency, status, captured, order_id, method,
    fee, tax, amount_refunded, international, created_at, email, contact, description, notes,
    extra_json, import_id
FROM payments;
DROP TABLE payments;
ALTER TABLE payments_0010 RENAME TO payments;
CREATE UNIQUE INDEX payments_id ON payments (id);
CREATE INDEX payments_order ON payments (order_id);
CREATE INDEX payments_created ON payments (created_at);

CREATE TABLE refunds_0010 (
    id          TEXT    NOT NULL,
    payment_id  TEXT    NOT NULL,
    amount      INTEGER NOT NULL CHECK (amount >= 0),
    currency    TEXT    NOT NULL DEFAULT 'INR',
    status      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    notes       TEXT,
    extra_json  TEXT,
    import_id   INTEGER REFERENCES imports (id)
);
INSERT INTO refunds_0010 (rowid, id, payment_id, amount, currency, status, created_at, notes,
    extra_json, import_id)
SELECT rowid, id, payment_id, amount, currency, status, created_at, notes, extra_json, import_id
FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_0010 RENAME TO refunds;
CREATE UNIQUE INDEX refunds_id ON refunds (id);
CREATE INDEX refunds_payment ON refunds (payment_id);

CREATE TABLE settlements_0010 (
    id          TEXT    NOT NULL,
    amount      INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    fees        INTEGER,
    tax         INTEGER,
    utr         TEXT,
    created_at  INTEGER NOT NULL,
    extra_json  TEXT,
    import_id   INTEGER REFERENCES imports (id)
);
INSERT INTO settlements_0010 (rowid, id, amount, status, fees, tax, utr, created_at,
    extra_json, import_id)
SELECT rowid, id, amount, status, fees, tax, utr, created_at, extra_json, import_id
FROM settlements;
DROP TABLE settlements;
ALTER TABLE settlements_0010 RENAME TO settlements;
CREATE UNIQUE INDEX settlements_id ON settlements (id);
CREATE INDEX settlements_utr ON settlements (utr);

-- Items of GET /v1/settlements/recon/combined. entity_id is not unique: a duplicated
-- row is itself a finding. row_key = type:entity_id:settlement_id:occurrence.
CREATE TABLE recon_rows_0010 (
    row_key         TEXT    NOT NULL,
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
INSERT INTO recon_rows_0010 (rowid, row_key, entity_id, type, debit, credit, amount, currency,
    fee, tax, on_hold, settled, created_at, settled_at, settlement_id, settlement_utr,
    payment_id, order_id, method, dispute_id, description, notes, extra_json, import_id)
SELECT rowid, row_key, entity_id, type, debit, credit, amount, currency,
    fee, tax, on_hold, settled, created_at, settled_at, settlement_id, settlement_utr,
    payment_id, order_id, method, dispute_id, description, notes, extra_json, import_id
FROM recon_rows;
DROP TABLE recon_rows;
ALTER TABLE recon_rows_0010 RENAME TO recon_rows;
CREATE UNIQUE INDEX recon_rows_key ON recon_rows (row_key);
CREATE INDEX recon_rows_entity ON recon_rows (entity_id);
CREATE INDEX recon_rows_settlement ON recon_rows (settlement_id);

-- Bank statement lines; id = '<file name>:<physical line number>'.
CREATE TABLE bank_lines_0010 (
    id          TEXT    NOT NULL,
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
INSERT INTO bank_lines_0010 (rowid, id, file, line_no, txn_date, value_date, narration,
    reference, utr, debit, credit, balance, import_id)
SELECT rowid, id, file, line_no, txn_date, value_date, narration,
    reference, utr, debit, credit, balance, import_id
FROM bank_lines;
DROP TABLE bank_lines;
ALTER TABLE bank_lines_0010 RENAME TO bank_lines;
CREATE UNIQUE INDEX bank_lines_id ON bank_lines (id);
CREATE INDEX bank_lines_utr ON bank_lines (utr);
CREATE INDEX bank_lines_date ON bank_lines (txn_date);
