-- PostgreSQL twin of migrations/0020_outcomes_clustered.sql (same version, same resulting schema). docs/postgres.md.
-- SQLite made outcomes a WITHOUT ROWID table; PostgreSQL keeps its heap and primary key.
-- The two secondary indexes become partial on status = 'EXCEPTION', as there.
DROP INDEX outcomes_status;
DROP INDEX outcomes_settlement;
CREATE INDEX outcomes_status ON outcomes (run_id, status, reason_code)
    WHERE status = 'EXCEPTION';
CREATE INDEX outcomes_settlement ON outcomes (run_id, settlement_id)
    WHERE status = 'EXCEPTION';
