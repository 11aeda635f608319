-- Nothing to do on SQLite: the app opens the database file itself, so it may ANALYZE and
-- drop and rebuild indexes (core.db.raw.write_frame does). The PostgreSQL twin
-- (migrations_pg/0098_bulk_maintenance.sql) gives the app role those two steps through
-- owner-defined functions (docs/postgres.md, "Statistics and index builds after bulk loads").
SELECT 1;
