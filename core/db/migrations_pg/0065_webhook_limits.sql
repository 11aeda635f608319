-- PostgreSQL twin of migrations/0065_webhook_limits.sql (same version, same resulting schema). docs/postgres.md.
CREATE TABLE razorpay_webhook_rejections (
    day       TEXT    NOT NULL,   -- UTC date, YYYY-MM-DD
    verdict   TEXT    NOT NULL,   -- unconfigured, bad_signature, too_large
    count     BIGINT  NOT NULL,
    first_at  BIGINT  NOT NULL,
    last_at   BIGINT  NOT NULL,
    PRIMARY KEY (day, verdict)
);

-- The delivery log gains the verdict 'refused' (SQLite rebuilt the table for its CHECK).
ALTER TABLE razorpay_webhook_log DROP CONSTRAINT razorpay_webhook_log_verdict_check;
ALTER TABLE razorpay_webhook_log ADD CONSTRAINT razorpay_webhook_log_verdict_check
    CHECK (verdict IN ('accepted', 'duplicate', 'bad_signature', 'malformed', 'unconfigured',
                       'refused'));
CREATE INDEX razorpay_webhook_log_received ON razorpay_webhook_log (received_at);
