-- Webhook limits.

-- Unsigned deliveries (no secret configured, a signature that does not match, a body too
-- large to check) are counted per UTC day and verdict, never stored row by row: a forger
-- must not be able to grow the database.
CREATE TABLE razorpay_webhook_rejections (
    day       TEXT    NOT NULL,   -- UTC date, YYYY-MM-DD
    verdict   TEXT    NOT NULL,   -- unconfigured, bad_signature, too_large
    count     INTEGER NOT NULL,
    first_at  INTEGER NOT NULL,
    last_at   INTEGER NOT NULL,
    PRIMARY KEY (day, verdict)
);

-- The delivery log keeps signed deliveries only, pruned by age (received_at), and gains
-- the verdict 'refused': a signed, well-formed event dated beyond the allowed clock skew.
CREATE TABLE razorpay_webhook_log_next (
    id            INTEGER PRIMARY KEY,
    received_at   INTEGER NOT NULL,
    event_id      TEXT,
    verdict       TEXT    NOT NULL CHECK (verdict IN
                  ('accepted', 'duplicate', 'bad_signature', 'malformed', 'unconfigured',
                   'refused')),
    reason        TEXT    NOT NULL,
    body_sha256   TEXT    NOT NULL,
    body_bytes    INTEGER NOT NULL
);
INSERT INTO razorpay_webhook_log_next SELECT * FROM razorpay_webhook_log;
DROP TABLE razorpay_webhook_log;
ALTER TABLE razorpay_webhook_log_next RENAME TO razorpay_webhook_log;
CREATE INDEX razorpay_webhook_log_verdict ON razorpay_webhook_log (verdict, received_at);
CREATE INDEX razorpay_webhook_log_received ON razorpay_webhook_log (received_at);
