-- Nothing to do on SQLite. The PostgreSQL twin (migrations_pg/0112_bulk_foreign_keys_not_runs.sql)
-- stops a large run's outcome load from dropping outcomes' foreign key to runs, which locked
-- runs (ACCESS EXCLUSIVE) for the rest of the run's transaction.
SELECT 1;
