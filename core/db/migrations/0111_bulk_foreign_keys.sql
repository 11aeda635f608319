-- Nothing to do on SQLite: foreign keys are off while staged rows are copied in
-- (core.ingest.load._store_staged), and the app owns its file. The PostgreSQL twin
-- (migrations_pg/0111_bulk_foreign_keys.sql) lets a large load drop and add again the
-- foreign keys of payments, recon_rows and outcomes, as 0098 does for their indexes.
SELECT 1;
