-- PostgreSQL twin of migrations/0112_bulk_foreign_keys_not_runs.sql. docs/postgres.md,
-- "Statistics and index builds after bulk loads".
--
-- Migration 0111 let razorrecon_drop_indexes drop the foreign keys of payments, recon_rows
-- and outcomes for a large load. Dropping a foreign key drops its triggers on the table it
-- points at too, and that takes ACCESS EXCLUSIVE on that table (not SHARE ROW EXCLUSIVE,
-- which is what adding one takes) until the transaction ends. For outcomes that table is
-- runs, which nearly every page reads: during a large run's store (the first large run)
-- every read of runs waited for its commit, and a reading unit that reads runs and then
-- outcomes (core.books.ledger._flagged: the latest completed run, then its EXCEPTION
-- outcomes) deadlocked with it: the writer held outcomes and waited for runs, the reader
-- held runs and waited for outcomes, and PostgreSQL aborted the run's store ("deadlock
-- detected"; tests/test_db_postgres_bulk_locks.py proves both). Outcomes now keep their key
-- to runs: their indexes are still dropped and built again, as under 0098.
--
-- What it costs, only on a run larger than the outcomes held (the first large run):
-- 957,706 outcomes (the 1M benchmark's) inserted with the key 10.3-14.7 s, without it
-- 5.1-8.1 s plus 0.27-0.68 s to add it after (3 alternated pairs, EXPLAIN ANALYZE on the
-- test server, load average 5.5-6.7 on two cores): 4-7 s of server CPU at that load, about
-- the 4.5 s docs/benchmark.md gives at a quiet one. Payments and recon_rows still drop their
-- key to imports (ACCESS EXCLUSIVE on imports for the load; docs/postgres.md, "Locks").

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
    -- The foreign keys this table holds (never those pointing at it: its primary key stays),
    -- but not outcomes' key to runs: dropping it would lock runs against every reader.
    IF target = 'outcomes' THEN
        RETURN dropped;
    END IF;
    FOR r IN
        SELECT k.conname AS name, pg_catalog.pg_get_constraintdef(k.oid) AS definition
        FROM pg_catalog.pg_constraint k
        WHERE k.conrelid = pg_catalog.format('public.%I', target)::regclass AND k.contype = 'f'
        ORDER BY k.conname
    LOOP
        INSERT INTO public.razorrecon_index_rebuilds (table_name, kind, index_name, definition)
            VALUES (target, 'foreign key', r.name, pg_catalog.format(
                'ALTER TABLE public.%I ADD CONSTRAINT %I %s', target, r.name, r.definition));
        EXECUTE pg_catalog.format('ALTER TABLE public.%I DROP CONSTRAINT %I', target, r.name);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;
