-- PostgreSQL backend (docs/postgres.md). Nothing changes in SQLite: this version exists so
-- both databases record the same schema_migrations. On PostgreSQL it refuses TRUNCATE of
-- the append-only tables and grants the app role everything but changing them.
SELECT 1;
