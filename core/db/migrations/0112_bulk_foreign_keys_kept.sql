-- Nothing to do on SQLite. The PostgreSQL twin (migrations_pg/0112_bulk_foreign_keys_kept.sql)
-- stops a large load from dropping foreign keys (0111): dropping one locks the table it
-- points at (imports, runs) against every reader until the load commits.
SELECT 1;
