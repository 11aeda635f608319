-- PostgreSQL twin of migrations/0102_settlement_exposure.sql: the settlement picker's sum of
-- open exposure per settlement read from an index alone (an index-only scan once the
-- visibility map is set).
CREATE INDEX IF NOT EXISTS exceptions_open_settlement
    ON exceptions (status, settlement_id, exposure_amount);
