-- Month close (issue 14, docs/books.md): a closed month's roll-forward, frozen. Later data
-- that touches it is shown as a prior-period adjustment in the next open month.
CREATE TABLE month_closes (
    month          TEXT    PRIMARY KEY,   -- YYYY-MM, IST
    closed_at      INTEGER NOT NULL,
    closed_by      TEXT    NOT NULL,
    run_id         INTEGER,               -- the run whose exceptions explained it
    closing        INTEGER NOT NULL,      -- paise
    residual       INTEGER NOT NULL,      -- paise
    snapshot_json  TEXT    NOT NULL,      -- MonthRollForward.as_dict()
    request_id     TEXT    NOT NULL UNIQUE
);
