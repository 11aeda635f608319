-- PostgreSQL twin of migrations/0015_money_model.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- Ingest: the rest of Razorpay's money model (docs/engine.md, "Razorpay's money model").
-- International payments and refunds carry the INR amount Razorpay converted them to;
-- `settled_by` says who settles (null or Razorpay: a Razorpay settlement is expected);
-- a transfer reversal recon row names its transfer. Keys follow 0010: a NOT NULL column
-- with a UNIQUE index of its own, so bulk loads can drop and rebuild it.

ALTER TABLE payments ADD COLUMN base_amount BIGINT;
ALTER TABLE payments ADD COLUMN settled_by TEXT;
ALTER TABLE refunds ADD COLUMN base_amount BIGINT;
ALTER TABLE refunds ADD COLUMN settled_by TEXT;
ALTER TABLE recon_rows ADD COLUMN transfer_id TEXT;
ALTER TABLE recon_rows ADD COLUMN settled_by TEXT;

-- Instant (on-demand) settlements, setlod_..., and their payouts, setlodp_..., each paid
-- to the bank under its own UTR.
CREATE TABLE instant_settlements (
    id                TEXT    NOT NULL,
    amount_requested  BIGINT NOT NULL CHECK (amount_requested >= 0),
    amount_settled    BIGINT,
    amount_pending    BIGINT,
    amount_reversed   BIGINT,
    fees              BIGINT,
    tax               BIGINT,
    currency          TEXT    NOT NULL DEFAULT 'INR',
    status            TEXT    NOT NULL,
    created_at        BIGINT NOT NULL,
    extra_json        TEXT,
    import_id         BIGINT REFERENCES imports (id)
);
CREATE UNIQUE INDEX instant_settlements_id ON instant_settlements (id);

CREATE TABLE instant_payouts (
    id                     TEXT    NOT NULL,
    instant_settlement_id  TEXT    NOT NULL,
    amount                 BIGINT NOT NULL CHECK (amount >= 0),
    amount_settled         BIGINT,
    fees                   BIGINT,
    tax                    BIGINT,
    utr                    TEXT,
    status                 TEXT    NOT NULL,
    created_at             BIGINT NOT NULL,
    processed_at           BIGINT,
    reversed_at            BIGINT,
    extra_json             TEXT,
    import_id              BIGINT REFERENCES imports (id)
);
CREATE UNIQUE INDEX instant_payouts_id ON instant_payouts (id);
CREATE INDEX instant_payouts_settlement ON instant_payouts (instant_settlement_id);
CREATE INDEX instant_payouts_utr ON instant_payouts (utr);

CREATE TABLE disputes (
    id               TEXT    NOT NULL,
    payment_id       TEXT    NOT NULL,
    amount           BIGINT NOT NULL CHECK (amount >= 0),
    currency         TEXT    NOT NULL DEFAULT 'INR',
    amount_deducted  BIGINT,
    status           TEXT    NOT NULL,
    phase            TEXT,
    reason_code      TEXT,
    respond_by       BIGINT,
    created_at       BIGINT NOT NULL,
    extra_json       TEXT,
    import_id        BIGINT REFERENCES imports (id)
);
CREATE UNIQUE INDEX disputes_id ON disputes (id);
CREATE INDEX disputes_payment ON disputes (payment_id);

-- Route transfers from the merchant's balance to linked accounts, trf_...
CREATE TABLE transfers (
    id                       TEXT    NOT NULL,
    source                   TEXT,
    recipient                TEXT,
    amount                   BIGINT NOT NULL CHECK (amount >= 0),
    currency                 TEXT    NOT NULL DEFAULT 'INR',
    amount_reversed          BIGINT,
    status                   TEXT    NOT NULL,
    on_hold                  BIGINT NOT NULL DEFAULT 0,
    on_hold_until            BIGINT,
    recipient_settlement_id  TEXT,
    created_at               BIGINT NOT NULL,
    extra_json               TEXT,
    import_id                BIGINT REFERENCES imports (id)
);
CREATE UNIQUE INDEX transfers_id ON transfers (id);
CREATE INDEX transfers_source ON transfers (source);
