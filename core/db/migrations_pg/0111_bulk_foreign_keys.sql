-- PostgreSQL twin of migrations/0111_bulk_foreign_keys.sql. docs/postgres.md, "Statistics and
-- index builds after bulk loads".
--
-- A foreign key is checked by a trigger once per inserted row: 4.7 s of server CPU for 1M
-- payments (each row's import_id looked up in imports), where adding the key again after
-- the load checks every row in one join, 0.37 s (docs/benchmark.md, "PostgreSQL --db at
-- 1M, the foreign keys"). PostgreSQL's advice for bulk loads says the same ("Remove Foreign
-- Key Constraints", https://www.postgresql.org/docs/15/populate.html). 0098's functions now
-- drop and add again the foreign keys the table holds, beside its indexes, under the same
-- rules: a fixed list of tables, only inside a writing unit, remembered in
-- razorrecon_index_rebuilds (which only the owner may touch), and a transaction that drops
-- and does not add them again cannot commit. Adding a key validates every row: a load that
-- broke it fails, and its rollback restores the rows, the indexes and the keys.

ALTER TABLE razorrecon_index_rebuilds ADD COLUMN kind TEXT NOT NULL DEFAULT 'index'
    CHECK (kind IN ('index', 'foreign key'));
ALTER TABLE razorrecon_index_rebuilds DROP CONSTRAINT razorrecon_index_rebuilds_pkey;
ALTER TABLE razorrecon_index_rebuilds ADD PRIMARY KEY (table_name, kind, index_name);

CREATE OR REPLACE FUNCTION razorrecon_refuse_unbuilt_index() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM public.razorrecon_index_rebuilds WHERE table_name = NEW.table_name
            AND kind = NEW.kind AND index_name = NEW.index_name)
    THEN
        RAISE EXCEPTION '% % of % was dropped for a bulk load and not built again',
            NEW.kind, NEW.index_name, NEW.table_name USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;

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
    -- The foreign keys this table holds (never those pointing at it: its primary key stays).
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

CREATE OR REPLACE FUNCTION razorrecon_build_indexes(target TEXT) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    r record;
    built integer := 0;
BEGIN
    IF target IS NULL OR target NOT IN ('payments', 'recon_rows', 'outcomes') THEN
        RAISE EXCEPTION 'razorrecon_build_indexes: % is not a table whose indexes it may build',
            target USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Indexes first, then the foreign keys, each added by one join over every row.
    FOR r IN
        SELECT b.kind, b.index_name, b.definition FROM public.razorrecon_index_rebuilds b
        WHERE b.table_name = razorrecon_build_indexes.target
        ORDER BY b.kind = 'foreign key', b.index_name
    LOOP
        EXECUTE r.definition;
        DELETE FROM public.razorrecon_index_rebuilds b
            WHERE b.table_name = razorrecon_build_indexes.target AND b.kind = r.kind
              AND b.index_name = r.index_name;
        built := built + 1;
    END LOOP;
    RETURN built;
END
$$;
