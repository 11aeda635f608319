-- PostgreSQL twin of migrations/0081_books_month_close.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- Month close (issue 14, docs/books.md): a closed month's roll-forward, frozen. Later data
-- that touches it is shown as a prior-period adjustment in the next open month.
CREATE TABLE month_closes (
    month          TEXT    PRIMARY KEY,   -- YYYY-MM, IST
    closed_at      BIGINT NOT NULL,
    closed_by      TEXT    NOT NULL,
    run_id         BIGINT,               -- the run whose exceptions explained it
    closing        BIGINT NOT NULL,      -- paise
    residual       BIGINT NOT NULL,      -- paise
    snapshot_json  TEXT    NOT NULL,      -- MonthRollForward.as_dict()
    request_id     TEXT    NOT NULL UNIQUE
);
