-- PostgreSQL twin of migrations/0112_bulk_foreign_keys_kept.sql. docs/postgres.md,
-- "Statistics and index builds after bulk loads".
--
-- Migration 0111 let razorrecon_drop_indexes drop the foreign keys of payments, recon_rows
-- and outcomes for a large load (a key is checked by a trigger per inserted row: ~4.5 s of
-- server CPU per million rows; adding it after checks them in one join). An independent
-- review found what that costs the other sessions: dropping a foreign key drops its triggers
-- on the table it points at too, which takes ACCESS EXCLUSIVE on that table (adding one
-- takes only SHARE ROW EXCLUSIVE) until the transaction ends.
-- - outcomes -> runs: nearly every page reads runs (core.db.page_reads.data_mark), so
--   every page waited for the whole of a large run's store, and a reading unit that reads
--   runs and then outcomes (core.books.ledger._flagged) deadlocked with it; PostgreSQL then
--   aborted the run's store ("deadlock detected"; tests/test_db_postgres_bulk_locks.py).
-- - payments, recon_rows -> imports: the Overview's run summary and the Data page read
--   imports (core.views.runs: data_version, latest_import), so they waited for a large
--   import's commit (tens of seconds at 1M), and any reading unit that reads imports before
--   a raw table would deadlock with the import the same way.
-- A page that waits for a load, or a load aborted by a reader, is worse than the CPU saved,
-- so every foreign key now stays: the functions drop and build indexes only, as under 0098.
-- The price: --db at 1M on PostgreSQL gives back the 7-13 s 0111 saved (docs/benchmark.md,
-- "PostgreSQL --db at 1M, the foreign keys"). `kind` stays; only 'index' rows are written.

CREATE OR REPLACE FUNCTION razorrecon_drop_indexes(target TEXT) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    r record;
    dropped integer := 0;
BEGIN
    IF target IS NULL OR target NOT IN ('payments', 'recon_rows', 'outcomes') THEN
        RAISE EXCEPTION 'razorrecon_drop_indexes: % is not a table whose indexes it may drop',
            target USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- core.db.backend.WRITE_LOCK (0x52525752495445) as pg_locks shows a bigint key.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory'
            AND pid = pg_catalog.pg_backend_pid() AND granted
            AND classid = 5395031 AND objid = 1380537413 AND objsubid = 1) THEN
        RAISE EXCEPTION 'razorrecon_drop_indexes: only inside a writing unit (the write lock)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Indexes only: a foreign key stays (dropping one locks the table it points at).
    FOR r IN
        SELECT c.relname AS name, pg_catalog.pg_get_indexdef(i.indexrelid) AS definition
        FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = pg_catalog.format('public.%I', target)::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid)
        ORDER BY c.relname
    LOOP
        INSERT INTO public.razorrecon_index_rebuilds (table_name, kind, index_name, definition)
            VALUES (target, 'index', r.name, r.definition);
        EXECUTE pg_catalog.format('DROP INDEX public.%I', r.name);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;
