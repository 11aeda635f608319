-- The sync also pulls instant settlements (with their payouts), disputes and transfers
-- (docs/razorpay.md): each has a watermark, so the resource check admits them.
CREATE TABLE razorpay_sync_watermarks_next (
    resource      TEXT    PRIMARY KEY CHECK (resource IN
                  ('payments', 'refunds', 'settlements', 'settlement_recon',
                   'instant_settlements', 'disputes', 'transfers')),
    range_from    TEXT    NOT NULL,
    range_to      TEXT    NOT NULL,
    done_through  TEXT,
    complete      INTEGER NOT NULL DEFAULT 0,
    items         INTEGER NOT NULL DEFAULT 0,  -- items stored for this range so far
    run_id        INTEGER NOT NULL REFERENCES razorpay_sync_runs (id),
    updated_at    INTEGER NOT NULL
);
INSERT INTO razorpay_sync_watermarks_next SELECT * FROM razorpay_sync_watermarks;
DROP TABLE razorpay_sync_watermarks;
ALTER TABLE razorpay_sync_watermarks_next RENAME TO razorpay_sync_watermarks;
